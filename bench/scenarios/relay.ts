// Scenario 1, relay overhead per token: arrival at a subscriber minus the
// model's send time, over graphql-ws and SSE, for one run alone and for 50 runs
// at once, beside the same streams read directly by ChatOllama.
import { percentiles, type Percentiles } from "../lib/stats.ts";
import { dist, scalar, type Row } from "../lib/report.ts";
import { startRunledger } from "../lib/runledger.ts";
import { gotEveryToken, type TokenLog } from "../lib/clients.ts";
import { relayThroughRunledger } from "../lib/relay-runs.ts";
import { consumeDirect } from "../lib/direct.ts";
import { holdKey, type StreamPlan } from "../../testkit/fake-ollama.ts";
import { repetitions, type Scenario } from "./scenario.ts";

// One run streams at 50 tokens/s, a fast model. Fifty concurrent runs stream at
// 10 tokens/s each (500 tokens/s in all), as fifty users sharing one model
// server would see; the concurrent scenario pushes 50 × 50 tokens/s.
const INTERVAL_MS: Record<number, number> = { 1: 20, 50: 100 };
const FIRST_DELAY_MS = 50;
/** Concurrent runs differ in length by up to this many tokens, so they end over a second, not all at once. */
export const LENGTH_SPREAD = 10;

/**
 * Run i of n starts i/n of an interval later, so concurrent streams interleave
 * as independent users' would, and runs `i % 10` tokens longer: runs ending
 * together would put every run's end-of-run work (last checkpoint, outcome)
 * in front of the other runs' last tokens at once.
 */
function plans(runs: number, tokens: number, hold?: string): StreamPlan[] {
  return relayPlans(runs, INTERVAL_MS[runs] ?? 20, tokens, hold);
}

/** The relay loads' plans, for a given token interval (the multi-instance scenario runs the same loads). */
export function relayPlans(runs: number, intervalMs: number, tokens: number, hold?: string): StreamPlan[] {
  return Array.from({ length: runs }, (_, i) => ({
    tokens: runs === 1 ? tokens : tokens + (i % LENGTH_SPREAD),
    intervalMs,
    firstDelayMs: FIRST_DELAY_MS + (i * intervalMs) / runs,
    hold,
  }));
}

export const totalTokens = (runPlans: StreamPlan[]) => runPlans.reduce((n, p) => n + p.tokens, 0);

function pooled(logs: TokenLog[]): Percentiles {
  return percentiles(logs.flatMap((l) => l.latencies));
}

export const relay: Scenario = {
  name: "relay",
  title: "Relay overhead per token",
  async run(options) {
    const reps = repetitions(options, 4);
    // Both cases last about as long: 100 tokens at 50/s, 20 at 10/s (quick: half).
    const tokensFor = (runs: number) => (runs === 1 ? 100 : 20) / (options.quick ? 2 : 1);
    const server = await startRunledger({
      modelUrl: options.modelUrl,
      cpuProfile: options.cpuProfile ? "relay-runledger" : undefined,
    });
    const notes: string[] = [];
    const cases = [
      { runs: 1, transport: "ws" as const, label: "graphql-ws, 1 run × 50 tokens/s" },
      { runs: 1, transport: "sse" as const, label: "SSE, 1 run × 50 tokens/s" },
      { runs: 50, transport: "ws" as const, label: "graphql-ws, 50 runs × 10 tokens/s" },
      { runs: 50, transport: "sse" as const, label: "SSE, 50 runs × 10 tokens/s" },
    ];
    const ours = new Map<string, Percentiles[]>(cases.map((c) => [c.label, []]));
    const floor = new Map<number, Percentiles[]>([
      [1, []],
      [50, []],
    ]);
    const incomplete = new Map<string, number>();
    // CPU per token: what limits how many streams a core can relay, and unlike latency it is not inflated by a busy machine.
    const ourCpu = new Map<string, number[]>(cases.map((c) => [c.label, []]));
    const floorCpu = new Map<number, number[]>([
      [1, []],
      [50, []],
    ]);
    try {
      // Warm-up: the first run pays for module loading and JIT on both sides.
      const warmKey = holdKey("relay-warm-up");
      await relayThroughRunledger(server.url, options.modelUrl, "ws", plans(2, 10, warmKey), warmKey);
      await consumeDirect(options.modelUrl, plans(1, 10)[0]!);
      for (let rep = 0; rep < reps; rep++) {
        for (const runs of [1, 50]) {
          const tokens = tokensFor(runs);
          const cpuBefore = process.cpuUsage();
          const floorPlans = plans(runs, tokens);
          const direct = await Promise.all(floorPlans.map((plan) => consumeDirect(options.modelUrl, plan)));
          const cpuUsed = process.cpuUsage(cpuBefore);
          floorCpu.get(runs)!.push((cpuUsed.user + cpuUsed.system) / 1000 / totalTokens(floorPlans));
          floor.get(runs)!.push(pooled(direct.map((d) => d.log)));
          options.log(
            `  rep ${rep + 1}/${reps} ChatOllama direct, ${runs} stream(s): p50 ${floor.get(runs)!.at(-1)!.p50.toFixed(2)} ms, p99 ${floor.get(runs)!.at(-1)!.p99.toFixed(2)} ms`,
          );
          for (const c of cases.filter((c) => c.runs === runs)) {
            const key = holdKey(`relay-${rep}`);
            const serverCpuBefore = server.cpuMs();
            const runPlans = plans(runs, tokens, key);
            const logs = await relayThroughRunledger(server.url, options.modelUrl, c.transport, runPlans, key);
            ourCpu.get(c.label)!.push((server.cpuMs() - serverCpuBefore) / totalTokens(runPlans));
            const missing = logs.filter((l, i) => !gotEveryToken(l, runPlans[i]!.tokens) || l.finalStatus !== "COMPLETED").length;
            if (missing) incomplete.set(c.label, (incomplete.get(c.label) ?? 0) + missing);
            ours.get(c.label)!.push(pooled(logs));
            options.log(
              `  rep ${rep + 1}/${reps} ${c.label}: p50 ${ours.get(c.label)!.at(-1)!.p50.toFixed(2)} ms, p99 ${ours.get(c.label)!.at(-1)!.p99.toFixed(2)} ms`,
            );
          }
        }
      }
    } finally {
      await server.stop();
    }
    const rows: Row[] = cases.flatMap((c) => {
      const measure = dist("ms", ours.get(c.label)!);
      const baseline = dist("ms", floor.get(c.runs)!);
      const addedP50 = measure.kind === "dist" && baseline.kind === "dist" ? measure.median.p50 - baseline.median.p50 : NaN;
      const addedP99 = measure.kind === "dist" && baseline.kind === "dist" ? measure.median.p99 - baseline.median.p99 : NaN;
      const lost = incomplete.get(c.label) ?? 0;
      const floorLabel = c.runs === 1 ? "ChatOllama direct, 1 stream" : "ChatOllama direct, 50 streams";
      return [
        {
          scenario: "relay",
          case: c.label,
          metric: "token latency",
          runledger: measure,
          baseline: { label: floorLabel, measure: baseline },
          target: { text: "added p50 ≤ 1 ms, p99 ≤ 5 ms", met: addedP50 <= 1 && addedP99 <= 5 && lost === 0 },
          notes: lost ? [`${lost} subscriber(s) missed tokens or did not see COMPLETED`] : undefined,
        },
        {
          scenario: "relay",
          case: c.label,
          metric: "CPU per token, run start and end included (server; baseline: harness)",
          runledger: scalar("ms", ourCpu.get(c.label)!),
          baseline: { label: floorLabel, measure: scalar("ms", floorCpu.get(c.runs)!) },
        },
      ];
    });
    notes.push(
      `${tokensFor(1)} tokens for 1 run; ${tokensFor(50)} to ${tokensFor(50) + LENGTH_SPREAD - 1} per run for 50 runs, starts spread over one token interval; ${reps} repetitions; one subscriber per run; streams start once every run is set up and subscribed`,
    );
    return { rows, notes };
  },
};
