// CPU per token, layer by layer: where the relay's cost is. One long stream
// per case, so per-run set-up is spread thin; CPU time (not wall time) is
// counted, so a busy machine slows these cases without changing their cost.
//   ChatOllama alone → LangGraph around it → runledger with no subscriber →
//   runledger with one graphql-ws subscriber → with one SSE subscriber.
import { medianOfReps, percentiles } from "../lib/stats.ts";
import { scalar, type Row } from "../lib/report.ts";
import { startRunledger } from "../lib/runledger.ts";
import { consumeDirect } from "../lib/direct.ts";
import { consumeThroughLangGraph } from "../lib/langgraph-floor.ts";
import { gqlOk, startRun } from "../../testkit/graphql.ts";
import { RUN_STATUS } from "../../testkit/documents.ts";
import { createClient, gotEveryToken, subscribeTokens, type TokenLog } from "../lib/clients.ts";
import { holdKey, planMessage, releaseStreams, waitForHeld, type StreamPlan } from "../../testkit/fake-ollama.ts";
import { repetitions, sleep, type Scenario } from "./scenario.ts";

const INTERVAL_MS = 1;

/** Polls the run's status (a subscription would itself cost the server per event). */
async function untilFinished(url: string, runId: string): Promise<void> {
  for (;;) {
    const { run } = await gqlOk(url, RUN_STATUS, { id: runId });
    if (run.status !== "RUNNING") return;
    await sleep(250);
  }
}

function harnessCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

export const cost: Scenario = {
  name: "cost",
  title: "CPU per token, layer by layer",
  async run(options) {
    const reps = repetitions(options, 3);
    const tokens = options.quick ? 1000 : 2000;
    const plan = (hold?: string): StreamPlan => ({ tokens, intervalMs: INTERVAL_MS, firstDelayMs: 0, hold });
    const server = await startRunledger({ modelUrl: options.modelUrl, cpuProfile: options.cpuProfile ? "cost-runledger" : undefined });
    const layers = [
      "ChatOllama alone (harness)",
      "LangGraph + ChatOllama (harness)",
      "runledger, no subscriber",
      "runledger + 1 graphql-ws subscriber",
      "runledger + 1 SSE subscriber",
    ];
    const cpu = new Map<string, number[]>(layers.map((l) => [l, []]));
    const latency = new Map<string, ReturnType<typeof percentiles>[]>(layers.map((l) => [l, []]));
    let lost = 0;
    try {
      await consumeDirect(options.modelUrl, { tokens: 50, intervalMs: 0 });
      await consumeThroughLangGraph(options.modelUrl, { tokens: 50, intervalMs: 0 });
      for (let rep = 0; rep < reps; rep++) {
        let before = harnessCpuMs();
        const direct = await consumeDirect(options.modelUrl, plan());
        cpu.get(layers[0]!)!.push((harnessCpuMs() - before) / tokens);
        latency.get(layers[0]!)!.push(percentiles(direct.log.latencies));

        before = harnessCpuMs();
        const graph = await consumeThroughLangGraph(options.modelUrl, plan());
        cpu.get(layers[1]!)!.push((harnessCpuMs() - before) / tokens);
        latency.get(layers[1]!)!.push(percentiles(graph.latencies));

        for (const [i, transport] of [
          [2, null],
          [3, "ws"],
          [4, "sse"],
        ] as const) {
          const key = holdKey(`cost-${rep}-${i}`);
          const { runId } = await startRun(server.url, planMessage(plan(key)));
          const client = transport ? createClient(transport, server.url) : null;
          const sub = client ? subscribeTokens(client, runId) : null;
          await sub?.live;
          await waitForHeld(options.modelUrl, key, 1);
          await sleep(200); // let the run's start settle: its CPU is not streaming
          const serverBefore = server.cpuMs();
          await releaseStreams(options.modelUrl, key);
          let log: TokenLog | null = null;
          if (sub) log = await sub.done;
          else await untilFinished(server.url, runId);
          cpu.get(layers[i]!)!.push((server.cpuMs() - serverBefore) / tokens);
          if (log && !gotEveryToken(log, tokens)) lost++;
          if (log) latency.get(layers[i]!)!.push(percentiles(log.latencies));
          await client?.dispose();
        }
        options.log(`  rep ${rep + 1}/${reps}: ${layers.map((l) => `${l} ${cpu.get(l)!.at(-1)!.toFixed(3)} ms`).join(", ")}`);
      }
    } finally {
      await server.stop();
    }
    const rows: Row[] = layers.map((layer, i) => {
      // Each layer against the one it wraps: LangGraph against ChatOllama, runledger against LangGraph.
      const below = i === 0 ? undefined : layers[i === 1 ? 0 : 1]!;
      const seen = medianOfReps(latency.get(layer)!);
      return {
        scenario: "cost",
        case: layer,
        metric: "CPU per token",
        runledger: scalar("ms", cpu.get(layer)!),
        baseline: below ? { label: below, measure: scalar("ms", cpu.get(below)!) } : undefined,
        notes: seen.n ? [`token latency p50 / p99 at ${1000 / INTERVAL_MS} tokens/s: ${seen.p50.toFixed(2)} / ${seen.p99.toFixed(2)} ms`] : undefined,
      };
    });
    return {
      rows,
      notes: [
        `one stream of ${tokens} tokens at ${1000 / INTERVAL_MS} tokens/s per case, ${reps} repetitions; harness cases count the harness's CPU (process.cpuUsage), runledger cases the server's (/proc/<pid>/stat) from release to the terminal event${lost ? `; ${lost} subscriber(s) missed tokens` : ""}`,
      ],
    };
  },
};
