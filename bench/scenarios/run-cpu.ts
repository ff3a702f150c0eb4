// Server CPU per run, start to COMPLETED: what a run costs besides its tokens
// (the mutation, the run's rows and checkpoints, LangGraph and LangChain set-up,
// the subscriber's stream). One process (WORKERS=1), the fake model streaming at
// once; each run is followed over SSE to its terminal event, as a client would.
// Runs of 2 tokens give the cost of a run; runs of 52 tokens beside them give the
// cost of a token (the difference, over the 50 extra tokens). CPU time from
// /proc, so a busy machine slows the runs without changing their cost.
import { scalar, type Row } from "../lib/report.ts";
import { startRunledger } from "../lib/runledger.ts";
import { startRun, sseClient } from "../../testkit/graphql.ts";
import { subscribeTokens } from "../lib/clients.ts";
import { planMessage } from "../../testkit/fake-ollama.ts";
import type { Child } from "../../testkit/processes.ts";
import { repetitions, type Scenario } from "./scenario.ts";

export const SHORT_TOKENS = 2;
export const LONG_TOKENS = 52;

/** Starts `runs` runs of `tokens` tokens, `concurrency` at a time, each followed to its end; returns the server's CPU per run in ms. */
export async function cpuPerRun(server: Child & { url: string }, options: { runs: number; concurrency: number; tokens: number }): Promise<number> {
  const client = sseClient(server.url);
  const message = planMessage({ tokens: options.tokens, intervalMs: 0 });
  const one = async () => {
    const { runId } = await startRun(server.url, message);
    const log = await subscribeTokens(client, runId).done;
    if (log.finalStatus !== "COMPLETED") throw new Error(`run ${runId} ended ${log.finalStatus}`);
  };
  try {
    const before = server.cpuMs();
    for (let done = 0; done < options.runs; done += options.concurrency) {
      await Promise.all(Array.from({ length: Math.min(options.concurrency, options.runs - done) }, one));
    }
    return (server.cpuMs() - before) / options.runs;
  } finally {
    await client.dispose();
  }
}

export const runCpu: Scenario = {
  name: "run-cpu",
  title: "Server CPU per run, start to end",
  async run(options) {
    const reps = repetitions(options, 3);
    const runs = options.quick ? 50 : 200;
    const server = await startRunledger({
      modelUrl: options.modelUrl,
      env: { WORKERS: "1" },
      cpuProfile: options.cpuProfile ? "run-cpu-runledger" : undefined,
    });
    const cases = [
      { name: "one at a time", concurrency: 1 },
      { name: "50 at once", concurrency: 50 },
    ];
    const perRun = new Map<string, number[]>(cases.map((c) => [c.name, []]));
    const perToken = new Map<string, number[]>(cases.map((c) => [c.name, []]));
    try {
      // Warm-up: the JIT, caches, the SQLite file. A server's CPU per run keeps falling over its first few hundred runs.
      await cpuPerRun(server, { runs: options.quick ? 50 : 400, concurrency: 1, tokens: SHORT_TOKENS });
      for (let rep = 0; rep < reps; rep++) {
        for (const c of cases) {
          const short = await cpuPerRun(server, { runs, concurrency: c.concurrency, tokens: SHORT_TOKENS });
          const long = await cpuPerRun(server, { runs: Math.max(50, runs / 4), concurrency: c.concurrency, tokens: LONG_TOKENS });
          perRun.get(c.name)!.push(short);
          perToken.get(c.name)!.push((long - short) / (LONG_TOKENS - SHORT_TOKENS));
          options.log(`  rep ${rep + 1}/${reps}, ${c.name}: ${short.toFixed(2)} ms per run, ${perToken.get(c.name)!.at(-1)!.toFixed(3)} ms per token`);
        }
      }
    } finally {
      await server.stop();
    }
    const rows: Row[] = cases.flatMap((c) => [
      {
        scenario: "run-cpu",
        case: `${SHORT_TOKENS}-token runs, ${c.name}`,
        metric: "server CPU per run, start to COMPLETED",
        runledger: scalar("ms", perRun.get(c.name)!),
      },
      {
        scenario: "run-cpu",
        case: `${LONG_TOKENS}-token runs, ${c.name}`,
        metric: "server CPU per token beyond the run's own",
        runledger: scalar("ms", perToken.get(c.name)!),
      },
    ]);
    return {
      rows,
      notes: [
        `${runs} runs of ${SHORT_TOKENS} tokens and ${Math.max(50, runs / 4)} of ${LONG_TOKENS} per case and repetition after ${options.quick ? 50 : 400} to warm up, ${reps} repetitions, WORKERS=1, each run followed over SSE to its terminal event; server CPU from /proc/<pid>/stat`,
      ],
    };
  },
};
