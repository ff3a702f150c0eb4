// What tracing costs, side by side: runledger with tracing off (metrics only,
// always on), with OpenTelemetry exporting every span (OTLP/HTTP protobuf, 100%
// sampling), and with LangSmith tracing on. Both sinks are one local HTTP server
// that accepts everything, so the numbers are runledger's own work (building,
// batching, encoding and sending), not a collector's. Per case: CPU per relayed
// token over one long stream with a graphql-ws subscriber (the server's CPU,
// from release to the terminal event), and the time to first token a chat
// client sees (startRun sent → first token, minus the model's own delay).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { percentiles, type Percentiles } from "../lib/stats.ts";
import { dist, scalar, type Row } from "../lib/report.ts";
import { startRunledger } from "../lib/runledger.ts";
import { nowMs } from "../../testkit/clock.ts";
import { startRun, wsClient } from "../../testkit/graphql.ts";
import { connected, createClient, gotEveryToken, subscribeTokens } from "../lib/clients.ts";
import { holdKey, planMessage, releaseStreams, waitForHeld, type StreamPlan } from "../../testkit/fake-ollama.ts";
import { repetitions, sleep, type Scenario } from "./scenario.ts";

/** Accepts whatever is sent (OTLP exports, LangSmith's /info and ingest calls) with 200 {}. */
async function startSink(): Promise<{ url: string; requests: () => number; close(): Promise<void> }> {
  let requests = 0;
  const server = http.createServer((req, res) => {
    requests++;
    req.resume();
    req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end("{}"));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const TTFT_PLAN: StreamPlan = { tokens: 3, intervalMs: 0, firstDelayMs: 0 };

export const observability: Scenario = {
  name: "observability",
  title: "Tracing off, OTLP on, LangSmith on",
  async run(options) {
    const reps = repetitions(options, 3);
    const tokens = options.quick ? 1000 : 2000;
    const ttftRuns = options.quick ? 10 : 25;
    const sink = await startSink();
    const cases: { name: string; env: Record<string, string> }[] = [
      { name: "tracing off", env: {} },
      { name: "OTLP, 100% sampled", env: { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_TRACES_SAMPLER: "always_on" } },
      { name: "LangSmith", env: { LANGSMITH_TRACING: "true", LANGSMITH_API_KEY: "bench", LANGSMITH_ENDPOINT: sink.url, LANGSMITH_PROJECT: "bench" } },
    ];
    const cpu = new Map<string, number[]>(cases.map((c) => [c.name, []]));
    const ttft = new Map<string, Percentiles[]>(cases.map((c) => [c.name, []]));
    let lost = 0;
    try {
      for (const c of cases) {
        const before = sink.requests();
        const server = await startRunledger({ modelUrl: options.modelUrl, env: c.env });
        try {
          const ws = wsClient(server.url, { lazy: false });
          await connected(ws);
          // Warm-up: the first runs load and compile what later runs reuse.
          for (let i = 0; i < 3; i++) await subscribeTokens(ws, (await startRun(server.url, planMessage(TTFT_PLAN))).runId).done;
          for (let rep = 0; rep < reps; rep++) {
            const samples: number[] = [];
            for (let i = 0; i < ttftRuns; i++) {
              const startedAt = nowMs();
              const { runId } = await startRun(server.url, planMessage(TTFT_PLAN));
              const log = await subscribeTokens(ws, runId).done;
              if (log.firstTokenAt !== null && log.firstStamp) samples.push(log.firstTokenAt - startedAt - (log.firstStamp.sentAt - log.firstStamp.requestAt));
            }
            ttft.get(c.name)!.push(percentiles(samples));

            const key = holdKey(`observability-${c.name}-${rep}`);
            const plan: StreamPlan = { tokens, intervalMs: 1, firstDelayMs: 0, hold: key };
            const { runId } = await startRun(server.url, planMessage(plan));
            const client = createClient("ws", server.url);
            const sub = subscribeTokens(client, runId);
            await sub.live;
            await waitForHeld(options.modelUrl, key, 1);
            await sleep(200);
            const serverBefore = server.cpuMs();
            await releaseStreams(options.modelUrl, key);
            const log = await sub.done;
            cpu.get(c.name)!.push((server.cpuMs() - serverBefore) / tokens);
            if (!gotEveryToken(log, tokens)) lost++;
            await client.dispose();
          }
          await ws.dispose();
        } finally {
          await server.stop();
        }
        options.log(
          `  ${c.name}: CPU per token ${cpu
            .get(c.name)!
            .map((v) => v.toFixed(3))
            .join(", ")} ms; ${sink.requests() - before} requests to the sink`,
        );
        if (c.name !== "tracing off" && sink.requests() === before) throw new Error(`${c.name}: nothing reached the sink; the case measured nothing`);
      }
    } finally {
      await sink.close();
    }
    const off = cases[0]!.name;
    const rows: Row[] = cases.flatMap((c) => [
      {
        scenario: "observability",
        case: c.name,
        metric: "CPU per token",
        runledger: scalar("ms", cpu.get(c.name)!),
        baseline: c.name === off ? undefined : { label: off, measure: scalar("ms", cpu.get(off)!) },
      },
      {
        scenario: "observability",
        case: c.name,
        metric: "time to first token added",
        runledger: dist("ms", ttft.get(c.name)!),
        baseline: c.name === off ? undefined : { label: off, measure: dist("ms", ttft.get(off)!) },
      },
    ]);
    return {
      rows,
      notes: [
        `per case and repetition: ${ttftRuns} short runs for time to first token (graphql-ws, a connection already held), then one stream of ${tokens} tokens at 1000 tokens/s with one graphql-ws subscriber for CPU; ${reps} repetitions; the sink accepts every export${lost ? `; ${lost} subscriber(s) missed tokens` : ""}`,
      ],
    };
  },
};
