// Scenario 3, fan-out: one run at 50 tokens/s watched by 1,000 graphql-ws
// subscribers (and, separately, 200 SSE subscribers), each on its own
// connection. Every subscriber must get every token; the latency is pooled over
// all of them. Memory per idle subscriber is the server's RSS growth while they
// are subscribed and nothing streams, divided by their number, each reading
// taken after a full garbage collection; each repetition starts a fresh server
// (warmed up), so memory freed by an earlier repetition cannot hide growth. The
// server is runledger's startApp in a child process with an IPC probe
// (probe.ts), which is what can ask it to collect. The floor is a plain broadcast relay (ws / SSE, no
// GraphQL) under the same load, read by the same minimal clients.
import { percentiles, type Percentiles } from "../lib/stats.ts";
import { dist, scalar, type Row } from "../lib/report.ts";
import type { Child } from "../../testkit/processes.ts";
import { ask, startRunledger } from "../lib/runledger.ts";
import { startRun } from "../../testkit/graphql.ts";
import { gotEveryToken, type TokenSubscription, type Transport } from "../lib/clients.ts";
import { rawSseSubscriber, rawWsSubscriber } from "../lib/raw-clients.ts";
import { floorSseSubscriber, floorStream, floorWsSubscriber, startFloorProcess } from "../lib/floor-clients.ts";
import { holdKey, planMessage, releaseStreams, waitForHeld, type StreamPlan } from "../../testkit/fake-ollama.ts";
import { repetitions, sleep, type Scenario } from "./scenario.ts";

const INTERVAL_MS = 20; // 50 tokens/s
const BATCH = 50; // subscribers connecting at once
const SETTLE_MS = 1_500;
const WARM_UP_SUBSCRIBERS = 20;

interface FanoutRep {
  latency: Percentiles;
  /** Bytes of server RSS per idle subscriber. */
  rssPerSubscriber: number;
  /** Bytes of V8 heap in use plus external memory per idle subscriber: steadier than RSS, which moves with the allocator. */
  heapPerSubscriber: number;
  /** Server CPU per delivered token event, in ms. */
  cpuPerDelivery: number;
  /** Subscribers that missed a token or the end. */
  incomplete: number;
  /** How the incomplete ones ended, counted by cause. */
  endings: Record<string, number>;
}

/** "3 closed with 1006, 1 errors: SUBSCRIBER_TOO_SLOW", summed over repetitions. */
function describeEndings(reps: FanoutRep[]): string {
  const total = new Map<string, number>();
  for (const rep of reps) for (const [cause, n] of Object.entries(rep.endings)) total.set(cause, (total.get(cause) ?? 0) + n);
  return [...total].map(([cause, n]) => `${n} ${cause}`).join(", ");
}

/** Subscribes in batches, so connection set-up is not itself a burst test. */
async function subscribeAll(count: number, subscribe: () => TokenSubscription): Promise<TokenSubscription[]> {
  const subs: TokenSubscription[] = [];
  for (let i = 0; i < count; i += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, count - i) }, subscribe);
    await Promise.all(batch.map((s) => s.live));
    subs.push(...batch);
  }
  return subs;
}

/** Asks a process for a full collection and answers its memory usage after it. */
type Collect = () => Promise<NodeJS.MemoryUsage>;

/** Memory after a full collection, so garbage does not pass for growth. */
async function settledMemory(server: Child, collect: Collect): Promise<{ rss: number; heap: number }> {
  await sleep(SETTLE_MS);
  await collect();
  await sleep(200);
  const usage = await collect();
  // Every process of the server: a cluster's primary and workers together.
  return { rss: server.rssBytesEach().reduce((a, b) => a + b, 0), heap: usage.heapUsed + usage.external };
}

async function measure(
  server: Child,
  collect: Collect,
  count: number,
  tokens: number,
  subscribe: () => TokenSubscription,
  stream: () => Promise<void>,
): Promise<FanoutRep> {
  const before = await settledMemory(server, collect);
  const subs = await subscribeAll(count, subscribe);
  const after = await settledMemory(server, collect);
  const cpuBefore = server.cpuMs();
  await stream();
  const logs = await Promise.all(subs.map((s) => s.done));
  const cpu = server.cpuMs() - cpuBefore;
  for (const s of subs) s.dispose();
  const endings: Record<string, number> = {};
  for (const l of logs)
    if (!gotEveryToken(l, tokens) || l.finalStatus !== "COMPLETED") endings[l.endedBy ?? "missed tokens"] = (endings[l.endedBy ?? "missed tokens"] ?? 0) + 1;
  return {
    endings,
    latency: percentiles(logs.flatMap((l) => l.latencies)),
    rssPerSubscriber: (after.rss - before.rss) / count,
    heapPerSubscriber: (after.heap - before.heap) / count,
    cpuPerDelivery: cpu / (count * tokens),
    incomplete: logs.filter((l) => !gotEveryToken(l, tokens) || l.finalStatus !== "COMPLETED").length,
  };
}

/** One repetition against a fresh runledger: warm-up, then `count` subscribers on one held run. */
async function runledgerRep(
  options: { modelUrl: string; cpuProfile: boolean },
  transport: Transport,
  count: number,
  tokens: number,
  rep: number,
): Promise<FanoutRep> {
  const server = await startRunledger({
    modelUrl: options.modelUrl,
    probe: true,
    cpuProfile: options.cpuProfile && rep === 0 ? `fanout-${transport}-runledger` : undefined,
    env: { SUBSCRIBER_QUEUE_LIMIT: "100000", EVENT_RETENTION: "100000" },
    exposeGc: true,
  });
  const subscriber = transport === "ws" ? rawWsSubscriber : rawSseSubscriber;
  try {
    const warmKey = holdKey(`fanout-warm-${rep}-${transport}`);
    const warm = await startRun(server.url, planMessage({ tokens: 10, intervalMs: 0, hold: warmKey }));
    const warmSubs = await subscribeAll(WARM_UP_SUBSCRIBERS, () => subscriber(server.url, warm.runId));
    await releaseStreams(options.modelUrl, warmKey);
    await Promise.all(warmSubs.map((s) => s.done));

    const key = holdKey(`fanout-${rep}-${transport}`);
    const plan: StreamPlan = { tokens, intervalMs: INTERVAL_MS, firstDelayMs: 0, hold: key };
    const { runId } = await startRun(server.url, planMessage(plan));
    await waitForHeld(options.modelUrl, key, 1);
    const collect = () => ask<NodeJS.MemoryUsage>(server, { cmd: "gc" });
    return await measure(
      server,
      collect,
      count,
      tokens,
      () => subscriber(server.url, runId),
      () => releaseStreams(options.modelUrl, key),
    );
  } finally {
    await server.stop();
  }
}

export const fanout: Scenario = {
  name: "fanout",
  title: "Fan-out to many subscribers of one run",
  async run(options) {
    const reps = repetitions(options, 2);
    const tokens = options.quick ? 50 : 100;
    const cases: { transport: Transport; count: number }[] = [
      { transport: "ws", count: options.quick ? 300 : 1000 },
      { transport: "sse", count: options.quick ? 100 : 200 },
    ];
    const ours = new Map<Transport, FanoutRep[]>([
      ["ws", []],
      ["sse", []],
    ]);
    const floor = new Map<Transport, FanoutRep[]>([
      ["ws", []],
      ["sse", []],
    ]);
    const describe = (r: FanoutRep) =>
      `p50 ${r.latency.p50.toFixed(1)} ms, p99 ${r.latency.p99.toFixed(1)} ms, ${(r.rssPerSubscriber / 1024).toFixed(1)} KB RSS and ${(r.heapPerSubscriber / 1024).toFixed(1)} KB heap/subscriber, ${(r.cpuPerDelivery * 1000).toFixed(0)} µs CPU/delivery, ${r.incomplete} incomplete${r.incomplete ? ` ${JSON.stringify(r.endings)}` : ""}`;
    for (let rep = 0; rep < reps; rep++) {
      for (const { transport, count } of cases) {
        const result = await runledgerRep(options, transport, count, tokens, rep);
        ours.get(transport)!.push(result);
        options.log(`  rep ${rep + 1}/${reps} runledger ${transport} × ${count}: ${describe(result)}`);

        const floorServer = await startFloorProcess(options.modelUrl);
        try {
          const subscriber = transport === "ws" ? floorWsSubscriber : floorSseSubscriber;
          await subscribeAll(WARM_UP_SUBSCRIBERS, () => subscriber(floorServer.url)).then(async (warm) => {
            await floorStream(floorServer.url, planMessage({ tokens: 10, intervalMs: 0 }));
            await Promise.all(warm.map((s) => s.done));
            for (const s of warm) s.dispose();
          });
          const collect = async () => (await (await fetch(`${floorServer.url}/gc`, { method: "POST" })).json()) as NodeJS.MemoryUsage;
          const floorResult = await measure(
            floorServer,
            collect,
            count,
            tokens,
            () => subscriber(floorServer.url),
            () => floorStream(floorServer.url, planMessage({ tokens, intervalMs: INTERVAL_MS, firstDelayMs: 0 })),
          );
          floor.get(transport)!.push(floorResult);
          options.log(`  rep ${rep + 1}/${reps} floor ${transport} × ${count}: ${describe(floorResult)}`);
        } finally {
          await floorServer.stop();
        }
      }
    }
    const rows: Row[] = [];
    for (const { transport, count } of cases) {
      const name = `${transport === "ws" ? "graphql-ws" : "SSE"} × ${count}`;
      const floorName = `plain ${transport === "ws" ? "ws" : "SSE"} broadcast × ${count}`;
      const runs = ours.get(transport)!;
      const floorRuns = floor.get(transport)!;
      const incomplete = runs.reduce((n, r) => n + r.incomplete, 0);
      const latency = dist(
        "ms",
        runs.map((r) => r.latency),
      );
      rows.push({
        scenario: "fanout",
        case: name,
        metric: "token latency, every subscriber",
        runledger: latency,
        baseline: {
          label: floorName,
          measure: dist(
            "ms",
            floorRuns.map((r) => r.latency),
          ),
        },
        target: { text: "p99 ≤ 25 ms, every token to every subscriber", met: latency.kind === "dist" && latency.median.p99 <= 25 && incomplete === 0 },
        notes: incomplete ? [`${incomplete} subscriber(s) over all repetitions missed tokens or the end: ${describeEndings(runs)}`] : undefined,
      });
      const kb = scalar(
        "KB",
        runs.map((r) => r.rssPerSubscriber / 1024),
      );
      const heapKb = scalar(
        "KB",
        runs.map((r) => r.heapPerSubscriber / 1024),
      );
      // RSS moves in allocator-sized steps; a reading at or below zero is noise, not a pass.
      const rssMet = kb.kind === "scalar" && kb.median > 0 && kb.median <= 50 && heapKb.kind === "scalar" && heapKb.median <= 50;
      rows.push({
        scenario: "fanout",
        case: name,
        metric: "server RSS per idle subscriber",
        runledger: kb,
        baseline: {
          label: floorName,
          measure: scalar(
            "KB",
            floorRuns.map((r) => r.rssPerSubscriber / 1024),
          ),
        },
        target: { text: "≤ 50 KB (and heap + external ≤ 50 KB)", met: rssMet },
        notes:
          kb.kind === "scalar" && kb.median <= 0
            ? ["RSS fell while subscribers were added: the reading is noise at this count; see heap + external"]
            : undefined,
      });
      rows.push({
        scenario: "fanout",
        case: name,
        metric: "server heap + external per idle subscriber",
        runledger: heapKb,
        baseline: {
          label: floorName,
          measure: scalar(
            "KB",
            floorRuns.map((r) => r.heapPerSubscriber / 1024),
          ),
        },
      });
      rows.push({
        scenario: "fanout",
        case: name,
        metric: "server CPU per token delivered",
        runledger: scalar(
          "µs",
          runs.map((r) => r.cpuPerDelivery * 1000),
        ),
        baseline: {
          label: floorName,
          measure: scalar(
            "µs",
            floorRuns.map((r) => r.cpuPerDelivery * 1000),
          ),
        },
      });
    }
    return {
      rows,
      notes: [
        `${tokens} tokens at ${1000 / INTERVAL_MS} tokens/s, ${reps} repetitions, a fresh server per repetition; subscribers connect ${BATCH} at a time on their own connections, with minimal protocol clients (raw-clients.ts); RSS from /proc/<pid>/status after a full GC, ${SETTLE_MS} ms after the last one is live`,
      ],
    };
  },
};
