// Scenario 6, concurrent runs: 50 runs stream at once, each to its own
// graphql-ws subscriber; all must complete. The server is runledger's startApp
// in a child process that also samples its own event-loop delay
// (bench/lib/probe.ts), so the harness's clients do not disturb the
// loop being measured. The baseline is the same process idle for as long.
import { percentiles, type Percentiles } from "../lib/stats.ts";
import { dist, scalar, type Row } from "../lib/report.ts";
import { ask, startRunledger, type LoopDelay } from "../lib/runledger.ts";
import { nowMs } from "../../testkit/clock.ts";
import { gotEveryToken } from "../lib/clients.ts";
import { relayThroughRunledger } from "../lib/relay-runs.ts";
import { holdKey } from "../../testkit/fake-ollama.ts";
import { repetitions, sleep, type Scenario } from "./scenario.ts";

const RUNS = 50;
const INTERVAL_MS = 20;
/** Tokens at each end of a run, told apart from the middle ones to say where the tail is: all runs stream their first and their last together. */
const EDGE = 10;

export const concurrent: Scenario = {
  name: "concurrent",
  title: "50 concurrent runs",
  async run(options) {
    const reps = repetitions(options, 3);
    const tokens = options.quick ? 50 : 100;
    const server = await startRunledger({
      modelUrl: options.modelUrl,
      cpuProfile: options.cpuProfile ? "concurrent-runledger" : undefined,
      probe: true,
    });
    const busy: LoopDelay[] = [];
    const idle: LoopDelay[] = [];
    const wallMs: number[] = [];
    const completed: number[] = [];
    const tokenLatency: Percentiles[] = [];
    const cpuPerToken: number[] = [];
    /** Per repetition: p50 / p99 of each run's first EDGE tokens, its middle ones and its last EDGE. */
    const edges: string[] = [];
    let lost = 0;
    try {
      // Warm-up: one round of 50 short runs, so the first measured round does not pay for JIT.
      const warmKey = holdKey("concurrent-warm-up");
      await relayThroughRunledger(
        server.url,
        options.modelUrl,
        "ws",
        Array.from({ length: RUNS }, () => ({ tokens: 10, intervalMs: INTERVAL_MS, hold: warmKey })),
        warmKey,
      );
      for (let rep = 0; rep < reps; rep++) {
        const key = holdKey(`concurrent-${rep}`);
        const plans = Array.from({ length: RUNS }, (_, i) => ({ tokens, intervalMs: INTERVAL_MS, firstDelayMs: (i * INTERVAL_MS) / RUNS, hold: key }));
        const streamMs = tokens * INTERVAL_MS;
        await ask(server, { cmd: "reset" });
        await sleep(streamMs);
        idle.push(await ask<LoopDelay>(server, { cmd: "read" }));
        // The busy window: from starting the runs to the last terminal event.
        const started = nowMs();
        const resetBeforeRelease = ask(server, { cmd: "reset" });
        const cpuBefore = server.cpuMs();
        const logs = await relayThroughRunledger(server.url, options.modelUrl, "ws", plans, key);
        cpuPerToken.push((server.cpuMs() - cpuBefore) / (RUNS * tokens));
        await resetBeforeRelease;
        busy.push(await ask<LoopDelay>(server, { cmd: "read" }));
        wallMs.push(nowMs() - started);
        completed.push(logs.filter((l) => l.finalStatus === "COMPLETED").length);
        lost += logs.filter((l) => !gotEveryToken(l, tokens)).length;
        const latency = percentiles(logs.flatMap((l) => l.latencies));
        tokenLatency.push(latency);
        const part = (slice: (l: number[]) => number[]) => {
          const p = percentiles(logs.flatMap((l) => slice(l.latencies)));
          return `${p.p50.toFixed(1)} / ${p.p99.toFixed(1)}`;
        };
        edges.push(`${part((l) => l.slice(0, EDGE))}, ${part((l) => l.slice(EDGE, -EDGE))}, ${part((l) => l.slice(-EDGE))}`);
        options.log(
          `  rep ${rep + 1}/${reps}: ${completed.at(-1)}/${RUNS} completed, loop delay p99 ${busy.at(-1)!.p99.toFixed(2)} ms (idle ${idle.at(-1)!.p99.toFixed(2)} ms), token p50 ${latency.p50.toFixed(1)} / p99 ${latency.p99.toFixed(1)} ms, server CPU ${cpuPerToken.at(-1)!.toFixed(3)} ms a token; first, middle, last tokens p50 / p99 ${edges.at(-1)} ms`,
        );
      }
    } finally {
      await server.stop();
    }
    const toPercentiles = (d: LoopDelay) => ({ p50: d.p50, p95: d.p95, p99: d.p99, max: d.max, n: d.samples });
    const allCompleted = completed.every((c) => c === RUNS) && lost === 0;
    const rows: Row[] = [
      {
        scenario: "concurrent",
        case: `${RUNS} runs at once`,
        metric: "event-loop delay while streaming",
        runledger: dist("ms", busy.map(toPercentiles)),
        baseline: { label: "same process, idle", measure: dist("ms", idle.map(toPercentiles)) },
        target: { text: `all ${RUNS} complete (p99 reported)`, met: allCompleted },
        notes: allCompleted ? undefined : [`completed per repetition: ${completed.join(", ")}; ${lost} subscriber(s) missed tokens`],
      },
      {
        scenario: "concurrent",
        case: `${RUNS} runs at once`,
        metric: "token latency, model → subscriber",
        runledger: dist("ms", tokenLatency),
        notes: [
          `where the tail is, p50 / p99 of each run's first ${EDGE} tokens, its middle ones and its last ${EDGE}, per repetition: ${edges.join("; ")} ms`,
        ],
      },
      {
        scenario: "concurrent",
        case: `${RUNS} runs at once`,
        metric: "server CPU per token, run start and end included (every process of the server)",
        runledger: scalar("ms", cpuPerToken),
      },
      {
        scenario: "concurrent",
        case: `${RUNS} runs at once`,
        metric: "runs completed",
        runledger: scalar("runs", completed, true),
      },
    ];
    return {
      rows,
      notes: [
        `${tokens} tokens per run at ${1000 / INTERVAL_MS} tokens/s (${(RUNS * 1000) / INTERVAL_MS} tokens/s in all), starts spread over one token interval so the runs also end together, ${reps} repetitions; event-loop delay sampled every 1 ms on the server's main thread (interval minus 1 ms); window from the start of the runs to the last terminal event, ${wallMs.map((w) => Math.round(w)).join(", ")} ms`,
      ],
    };
  },
};
