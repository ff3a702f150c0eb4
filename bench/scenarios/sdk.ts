// The client SDK's own costs, against a runledger process and the stamping fake
// model:
// - what @runledger/client adds per token over a raw graphql-ws client: both
//   follow the same runs at once, each on its own socket, and each token is
//   timed from its WebSocket message's arrival to the raw client's next(), to
//   the store's event applied (onEvent) and to its listeners told (with
//   syncScheduler, and with the default 16 ms turn);
// - a token's cost in a store whose thread holds 20 or 2,000 messages (the
//   test transport, in this process): structurally shared snapshots keep it
//   from growing with the thread;
// - renders per second of @runledger/react in Chromium under a 100 tokens/s
//   stream (and a faster one), beside the same page told of every change;
// - the bundles' size, minified and gzipped, as an app's bundler makes them:
//   a chat page's at start (what the client imports on demand, the SSE
//   transport, fork and edit, a gap's refill, the conversation list, split
//   off) and with all of it.
import path from "node:path";
import zlib from "node:zlib";
import WebSocket from "ws";
import * as esbuild from "esbuild";
import { createClient as createWsClient } from "graphql-ws";
import {
  createRunledgerClient,
  syncScheduler,
  type ConversationStore,
  type RunEvent,
  type RunledgerClient,
  type Scheduler,
} from "../../packages/client/src/index.ts";
import { createTestTransport, type RecordedRun } from "../../packages/client/src/testing.ts";
import { RUN_EVENTS } from "../../packages/client/src/documents.ts";
import { percentiles, type Percentiles } from "../lib/stats.ts";
import { dist, scalar, type Row } from "../lib/report.ts";
import { startRunledger } from "../lib/runledger.ts";
import { planMessage } from "../../testkit/fake-ollama.ts";
import { launchChromium } from "../../testkit/browser.ts";
import { ROOT } from "../../testkit/processes.ts";
import { bundlePage, startPageServer } from "../../test/react/bundle.ts";
import { repetitions, type Scenario } from "./scenario.ts";

/** A ws WebSocket that notes when each message arrived, before anyone else's listener runs. */
function stampingWebSocket(arrived: { at: number }) {
  return class StampingWebSocket extends WebSocket {
    constructor(...args: ConstructorParameters<typeof WebSocket>) {
      super(...args);
      this.on("message", () => (arrived.at = performance.now()));
    }
  };
}

interface LatencySamples {
  raw: number[];
  applied: number[];
  toldSync: number[];
  toldFrame: number[];
}

/** A store on its own stamped socket, noting per token arrival → event applied, and arrival → listeners told. */
function stampedStore(url: string, schedule: Scheduler, applied: number[], told: number[]): { client: RunledgerClient; store: ConversationStore } {
  const arrived = { at: 0 };
  const client = createRunledgerClient({ url, transport: "websocket", webSocketImpl: stampingWebSocket(arrived), schedule });
  const store = client.conversation();
  let pending: number | null = null;
  store.onEvent((event) => {
    if (event.__typename !== "TokenEvent") return;
    applied.push(performance.now() - arrived.at);
    pending ??= arrived.at;
  });
  store.subscribe(() => {
    if (pending === null) return;
    told.push(performance.now() - pending);
    pending = null;
  });
  return { client, store };
}

/** Both clients on the same runs: each token, arrival → callback. */
async function latencyRep(url: string, runs: number, tokens: number): Promise<LatencySamples> {
  const samples: LatencySamples = { raw: [], applied: [], toldSync: [], toldFrame: [] };
  const rawArrived = { at: 0 };
  const raw = createWsClient({ url: url.replace(/^http/, "ws") + "/graphql", webSocketImpl: stampingWebSocket(rawArrived), lazy: false, retryAttempts: 0 });
  const sync = stampedStore(url, syncScheduler, samples.applied, samples.toldSync);
  // The default scheduler, told at the next 16 ms turn: its applied times are noted by the first store already.
  const frame = stampedStore(url, (flush) => setTimeout(flush, 16), [], samples.toldFrame);
  try {
    for (let i = 0; i < runs; i++) {
      const sent = await sync.store.submit(planMessage({ tokens, intervalMs: 10, firstDelayMs: 200 }));
      if (!sent.ok) throw new Error(sent.error.message);
      const { runId, conversationId } = sent.value;
      frame.store.open(conversationId);
      const done = new Promise<void>((resolve, reject) => {
        raw.subscribe<{ runEvents: RunEvent }>(
          { query: RUN_EVENTS, variables: { runId } },
          {
            next: ({ data }) => {
              if (data?.runEvents.__typename === "TokenEvent") samples.raw.push(performance.now() - rawArrived.at);
            },
            error: reject,
            complete: resolve,
          },
        );
      });
      await done;
      // The stores read the thread once the run ends: the next run goes into a fresh conversation.
      await new Promise((resolve) => setTimeout(resolve, 300));
      sync.store.open(null);
    }
  } finally {
    await raw.dispose();
    await sync.client.dispose();
    await frame.client.dispose();
  }
  return samples;
}

/** A run of `count` tokens into one answer, as the test transport plays it. */
function tokenRun(count: number): RecordedRun {
  const base = { runId: "", at: new Date(0).toISOString() };
  const events: RunEvent[] = [
    { __typename: "RunStatusEvent", seq: 0, status: "RUNNING", errorCode: null, errorMessage: null, ...base },
    ...Array.from({ length: count }, (_, i): RunEvent => ({ __typename: "TokenEvent", seq: 0, text: `w${i} `, messageId: "answer", node: "agent", ...base })),
    { __typename: "RunStatusEvent", seq: 0, status: "COMPLETED", errorCode: null, errorMessage: null, ...base },
  ];
  return {
    events,
    messages: [
      { id: "q", role: "USER", content: "", toolCalls: [], toolCallId: null, name: null },
      { id: "answer", role: "ASSISTANT", content: "", toolCalls: [], toolCallId: null, name: null },
    ],
  };
}

/** One token's whole cost in a store told of every change: from the event handed over to its listeners told, with `messages` in the thread. */
async function tokenCost(messages: number, tokens: number): Promise<Percentiles> {
  const transport = createTestTransport({ script: () => tokenRun(tokens), autoplay: false });
  const thread = Array.from({ length: messages }, (_, i) => ({
    id: `m${i}`,
    role: i % 2 ? ("ASSISTANT" as const) : ("USER" as const),
    content: `message ${i}`,
    toolCalls: [],
    toolCallId: null,
    name: null,
  }));
  const conversationId = transport.addConversation({ messages: thread });
  const client = createRunledgerClient({ transport, schedule: syncScheduler });
  const store = client.conversation(conversationId);
  let told = 0;
  store.subscribe(() => told++);
  while (store.getSnapshot().phase !== "ready") await new Promise((resolve) => setTimeout(resolve, 1));
  const sent = await store.submit("Go");
  if (!sent.ok) throw new Error(sent.error.message);
  while (!transport.sent.some((s) => s.name === "RunledgerRunEvents")) await new Promise((resolve) => setTimeout(resolve, 1));
  await new Promise((resolve) => setTimeout(resolve, 5));
  transport.step(sent.value.runId, 1);
  const costs: number[] = [];
  for (let i = 0; i < tokens; i++) {
    const before = told;
    const started = performance.now();
    transport.step(sent.value.runId, 1);
    costs.push(performance.now() - started);
    if (told !== before + 1) throw new Error("a token was not told at once");
  }
  await client.dispose();
  return percentiles(costs);
}

/**
 * Minified and gzipped size of `entry`'s bundle. `onDemand`: modules the
 * client imports dynamically that stay outside it, as an app's bundler splits a
 * dynamic import into a chunk of its own (a static import of them, such as
 * index.ts's re-export, is bundled and tree-shaken as usual).
 */
async function gzipSize(entry: { contents: string } | string, external: string[], onDemand: string[] = []): Promise<number> {
  const splitOff: esbuild.Plugin = {
    name: "split-off",
    setup(build) {
      build.onResolve({ filter: /^\.\/[\w-]+\.js$/ }, (args) =>
        args.kind === "dynamic-import" && onDemand.includes(args.path) ? { path: args.path, external: true } : undefined,
      );
    },
  };
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    ...(typeof entry === "string" ? { entryPoints: [entry] } : { stdin: { contents: entry.contents, resolveDir: ROOT, loader: "ts" } }),
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    target: ["es2022"],
    write: false,
    external,
    plugins: [splitOff],
    logLevel: "silent",
    // The client's sources under its package name, unless it is to stay outside the bundle.
    alias: external.includes("@runledger/client") ? {} : { "@runledger/client": path.join(ROOT, "packages", "client", "src", "index.ts") },
    define: { "process.env.NODE_ENV": '"production"' },
  });
  return zlib.gzipSync(result.outputFiles![0]!.contents, { level: 9 }).length / 1024;
}

interface RenderRep {
  rendersPerSecond: number;
  framesPerSecond: number;
  tokensPerSecond: number;
  mostInOneFrame: number;
}

export const sdk: Scenario = {
  name: "sdk",
  title: "Client SDK: added latency per token, renders, bundle size",
  async run(options) {
    const reps = repetitions(options, 3, 1);
    const runs = options.quick ? 1 : 2;
    const tokens = options.quick ? 100 : 300;
    const site = await startPageServer();
    const server = await startRunledger({
      modelUrl: options.modelUrl,
      env: { CORS_ORIGINS: site.origin },
      cpuProfile: options.cpuProfile ? "sdk-runledger" : undefined,
    });
    const rows: Row[] = [];
    const notes: string[] = [];
    try {
      // Added latency: a warm-up rep, then the measured ones.
      await latencyRep(server.url, 1, 50);
      const latency: LatencySamples[] = [];
      for (let rep = 0; rep < reps; rep++) {
        const samples = await latencyRep(server.url, runs, tokens);
        latency.push(samples);
        const p = (xs: number[]) => percentiles(xs).p50.toFixed(3);
        options.log(`  rep ${rep + 1}/${reps}: raw ${p(samples.raw)} ms, applied ${p(samples.applied)} ms, told ${p(samples.toldSync)} ms (p50)`);
      }
      const of = (key: keyof LatencySamples) => latency.map((s) => percentiles(s[key]));
      const rawBaseline = { label: "raw graphql-ws client: arrival → next()", measure: dist("ms", of("raw")) };
      const added = (key: keyof LatencySamples) => {
        const ours = dist("ms", of(key));
        const base = rawBaseline.measure;
        return ours.kind === "dist" && base.kind === "dist" ? ours.median.p50 - base.median.p50 : Number.NaN;
      };
      rows.push({
        scenario: "sdk",
        case: "@runledger/client, 100 tokens/s",
        metric: "per token: WebSocket message → event applied (onEvent)",
        runledger: dist("ms", of("applied")),
        baseline: rawBaseline,
        target: { text: "added ≤ 0.2 ms at p50", met: added("applied") <= 0.2 },
      });
      rows.push({
        scenario: "sdk",
        case: "@runledger/client, 100 tokens/s",
        metric: "per token: WebSocket message → snapshot listeners told (syncScheduler)",
        runledger: dist("ms", of("toldSync")),
        baseline: rawBaseline,
        target: { text: "added ≤ 0.2 ms at p50", met: added("toldSync") <= 0.2 },
      });
      rows.push({
        scenario: "sdk",
        case: "@runledger/client, 100 tokens/s",
        metric: "per token: WebSocket message → listeners told at the default turn (16 ms in Node, a frame in a browser)",
        runledger: dist("ms", of("toldFrame")),
        notes: ["by design: the default tells once per turn, with every token since"],
      });

      // A token's cost against the thread's length.
      for (const messages of [20, 2_000]) {
        const costs: Percentiles[] = [];
        for (let rep = 0; rep < reps; rep++) costs.push(await tokenCost(messages, options.quick ? 200 : 1_000));
        rows.push({
          scenario: "sdk",
          case: `store, ${messages.toLocaleString("en-US")}-message thread`,
          metric: "per token: event handed to the store → listeners told (syncScheduler, in process)",
          runledger: dist("ms", costs),
        });
      }

      // Renders per second in Chromium.
      const [page, browser] = await Promise.all([bundlePage("react"), launchChromium()]);
      site.serve(page);
      try {
        const renderRep = async (intervalMs: number, count: number, sync: boolean): Promise<RenderRep> => {
          const context = await browser.newContext();
          try {
            const tab = await context.newPage();
            await tab.goto(`${site.origin}/index.html?api=${encodeURIComponent(server.url)}${sync ? "&sync" : ""}`);
            await tab.waitForFunction(() => window.sdkPage !== undefined);
            const sent = (await tab.evaluate((message) => window.sdkPage.submit(message), planMessage({ tokens: count, intervalMs, firstDelayMs: 200 }))) as {
              runId: string;
            };
            await tab.locator(`#chat[data-run="${sent.runId}"][data-status="COMPLETED"]`).waitFor({ state: "attached", timeout: 60_000 });
            return await tab.evaluate(
              ({ runId, count }) => {
                const notes = window.sdkPage.stats.notes;
                const events = window.sdkPage.events.filter((e) => e.runId === runId && e.type === "TokenEvent");
                const from = notes.find((n) => n.runIds.includes(runId) && n.streamed > 0)!.at;
                const to = notes.find((n) => n.at > from && n.status === "COMPLETED")!.at;
                const renders = notes.filter((n) => n.at >= from && n.at <= to);
                const frames = window.sdkPage.frames.filter((f) => f >= from && f <= to);
                let most = 0;
                for (let i = 0; i < frames.length; i++) {
                  const end = frames[i + 1] ?? Infinity;
                  most = Math.max(most, renders.filter((r) => r.at >= frames[i]! && r.at < end).length);
                }
                const seconds = (to - from) / 1000;
                return {
                  rendersPerSecond: renders.length / seconds,
                  framesPerSecond: frames.length / seconds,
                  tokensPerSecond: Math.min(events.length, count) / seconds,
                  mostInOneFrame: most,
                };
              },
              { runId: sent.runId, count },
            );
          } finally {
            await context.close();
          }
        };
        const streamTokens = options.quick ? 200 : 500;
        for (const { intervalMs, label } of [
          { intervalMs: 10, label: "100 tokens/s" },
          { intervalMs: 2, label: "500 tokens/s" },
        ]) {
          const ours: RenderRep[] = [];
          const everyChange: RenderRep[] = [];
          for (let rep = 0; rep < reps; rep++) {
            ours.push(await renderRep(intervalMs, streamTokens, false));
            everyChange.push(await renderRep(intervalMs, streamTokens, true));
          }
          const frames = ours.map((r) => r.framesPerSecond);
          const onePerFrame = ours.every((r, i) => r.mostInOneFrame <= 1 && r.rendersPerSecond <= frames[i]! * 1.05);
          rows.push({
            scenario: "sdk",
            case: `@runledger/react in Chromium, ${label}`,
            metric: "renders per second while streaming",
            runledger: scalar(
              "renders/s",
              ours.map((r) => r.rendersPerSecond),
            ),
            baseline: {
              label: "the same page told of every change (syncScheduler)",
              measure: scalar(
                "renders/s",
                everyChange.map((r) => r.rendersPerSecond),
              ),
            },
            target: { text: "one render per frame at most", met: onePerFrame },
            notes: [
              `frames/s ${frames.map((f) => f.toFixed(0)).join(", ")}; tokens/s ${ours.map((r) => r.tokensPerSecond.toFixed(0)).join(", ")}; most renders in one frame ${Math.max(...ours.map((r) => r.mostInOneFrame))}`,
            ],
          });
        }
      } finally {
        await browser.close();
      }
    } finally {
      await server.stop();
      await site.close();
    }

    // Bundle sizes, as an app's bundler makes them (minified, tree-shaken, gzip -9).
    const client = path.join(ROOT, "packages", "client", "src", "index.ts");
    const react = path.join(ROOT, "packages", "react", "src", "index.ts");
    // What the client loads only when it is used (a dynamic import, which an app's bundler splits off into a chunk of its own).
    const onDemand = ["./sse.js", "./branch-actions.js", "./run-refill.js", "./conversation-list.js"];
    const chatPage = { contents: `export { createRunledgerClient } from "@runledger/client";` };
    const sizes = [
      {
        case: "@runledger/client: createRunledgerClient (a chat page), loaded at start",
        size: await gzipSize(chatPage, ["graphql-ws"], onDemand),
        target: 12,
      },
      {
        case: "@runledger/client: createRunledgerClient with SSE, fork and edit, a gap's refill and the list loaded too",
        size: await gzipSize(chatPage, ["graphql-ws"]),
      },
      { case: "@runledger/client: everything it exports", size: await gzipSize(client, ["graphql-ws"]) },
      { case: "graphql-ws (its client, the peer)", size: await gzipSize({ contents: `export { createClient } from "graphql-ws";` }, []) },
      { case: "@runledger/react (react and the client outside)", size: await gzipSize(react, ["react", "@runledger/client"]) },
    ];
    for (const { case: name, size, target } of sizes) {
      rows.push({
        scenario: "sdk",
        case: name,
        metric: "bundle size, minified and gzipped",
        runledger: scalar("KB", [size]),
        ...(target ? { target: { text: `≤ ${target} KB plus graphql-ws`, met: size <= target } } : {}),
      });
    }
    notes.push(
      "Latency rows: both clients follow the same runs at once, each on its own socket in this process; each token is timed from its WebSocket message's arrival (a listener ahead of the client's) to the callback named, so the model and the network are out of it.",
      "Renders: the page of test/react (react-dom 19, production build), headless Chromium; a render is the chat component's, counted between the first streamed render and the one showing the run ended.",
      "Sizes: esbuild, minified, gzip -9. 'Loaded at start' keeps the modules the client imports on demand outside, as an app's bundler (Vite, webpack, Next) splits a dynamic import into a chunk of its own; 'loaded too' bundles them in.",
    );
    return { rows, notes };
  },
};
