// Scenario 2, time to first token added by runledger: from sending startRun to
// the first TokenEvent, as a chat client sees it (start the run, then subscribe
// to its events over a connection it already holds), minus the model's own
// delay between receiving the request and sending its first chunk. The stamps
// split it into its legs: startRun's round trip, startRun sent → model request
// (run row, graph set-up, first checkpoint, HTTP to the model), and the first
// token's relay.
import { percentiles, type Percentiles } from "../lib/stats.ts";
import { dist, type Row } from "../lib/report.ts";
import { startRunledger } from "../lib/runledger.ts";
import { nowMs } from "../../testkit/clock.ts";
import { sseClient, startRun, wsClient } from "../../testkit/graphql.ts";
import { connected, subscribeTokens, type TokenLog, type Transport } from "../lib/clients.ts";
import { consumeDirect } from "../lib/direct.ts";
import { planMessage, type StreamPlan } from "../../testkit/fake-ollama.ts";
import { repetitions, type Scenario } from "./scenario.ts";

const PLAN: StreamPlan = { tokens: 3, intervalMs: 0, firstDelayMs: 0 };

interface Sample {
  /** startRun sent → first token received, minus the model's first-chunk delay. */
  added: number;
  /** startRun sent → its response received (NaN for the direct floor). */
  startRun: number;
  /** startRun sent (or stream() called) → the model receives the request. */
  toModel: number;
  /** The first token: model send → client receive. */
  firstRelay: number;
}

function sample(log: TokenLog, startedAt: number, answeredAt: number): Sample {
  if (log.firstTokenAt === null || log.firstStamp === null) return { added: NaN, startRun: NaN, toModel: NaN, firstRelay: NaN };
  const { sentAt, requestAt } = log.firstStamp;
  return {
    added: log.firstTokenAt - startedAt - (sentAt - requestAt),
    startRun: answeredAt - startedAt,
    toModel: requestAt - startedAt,
    firstRelay: log.firstTokenAt - sentAt,
  };
}

const LEGS = [
  { key: "startRun", metric: "leg: startRun round trip" },
  { key: "toModel", metric: "leg: startRun sent → model request" },
  { key: "firstRelay", metric: "leg: first token, model → client" },
] as const;

export const ttft: Scenario = {
  name: "ttft",
  title: "Time to first token added",
  async run(options) {
    const reps = repetitions(options, 4);
    const perRep = options.quick ? 10 : 25;
    const server = await startRunledger({ modelUrl: options.modelUrl, cpuProfile: options.cpuProfile ? "ttft-runledger" : undefined });
    const ours = new Map<Transport, Sample[][]>([
      ["ws", []],
      ["sse", []],
    ]);
    const floor: Sample[][] = [];
    let missing = 0;
    try {
      for (let i = 0; i < 3; i++) await consumeDirect(options.modelUrl, PLAN);
      for (let rep = 0; rep < reps + 1; rep++) {
        const warmUp = rep === 0;
        const direct: Sample[] = [];
        for (let i = 0; i < perRep; i++) {
          const { log, startedAt } = await consumeDirect(options.modelUrl, PLAN);
          direct.push(sample(log, startedAt, NaN));
        }
        if (!warmUp) floor.push(direct);
        for (const transport of ["ws", "sse"] as const) {
          const client = transport === "ws" ? wsClient(server.url, { lazy: false }) : sseClient(server.url);
          if (transport === "ws") await connected(client as ReturnType<typeof wsClient>);
          const samples: Sample[] = [];
          for (let i = 0; i < perRep; i++) {
            const startedAt = nowMs();
            const { runId } = await startRun(server.url, planMessage(PLAN));
            const answeredAt = nowMs();
            const log = await subscribeTokens(client, runId).done;
            if (log.firstTokenAt === null) missing++;
            samples.push(sample(log, startedAt, answeredAt));
          }
          await client.dispose();
          if (!warmUp) {
            ours.get(transport)!.push(samples);
            const p = percentiles(samples.map((s) => s.added));
            options.log(`  rep ${rep}/${reps} ${transport}: p50 ${p.p50.toFixed(1)} ms, p95 ${p.p95.toFixed(1)} ms`);
          }
        }
      }
    } finally {
      await server.stop();
    }
    const of = (reps: Sample[][], key: keyof Sample): Percentiles[] => reps.map((r) => percentiles(r.map((s) => s[key])));
    const rows: Row[] = [];
    for (const transport of ["ws", "sse"] as const) {
      const name = transport === "ws" ? "graphql-ws" : "SSE";
      const measure = dist("ms", of(ours.get(transport)!, "added"));
      rows.push({
        scenario: "ttft",
        case: name,
        metric: "startRun sent → first TokenEvent, minus model delay",
        runledger: measure,
        baseline: { label: "ChatOllama direct: stream() → first chunk, minus model delay", measure: dist("ms", of(floor, "added")) },
        target: { text: "p95 ≤ 50 ms", met: measure.kind === "dist" && measure.median.p95 <= 50 && missing === 0 },
        notes: missing ? [`${missing} run(s) without a token`] : undefined,
      });
      for (const leg of LEGS) {
        rows.push({
          scenario: "ttft",
          case: name,
          metric: leg.metric,
          runledger: dist("ms", of(ours.get(transport)!, leg.key)),
          baseline:
            leg.key === "startRun"
              ? undefined
              : {
                  label: leg.key === "toModel" ? "ChatOllama: stream() → model request" : "ChatOllama: first chunk, model → client",
                  measure: dist("ms", of(floor, leg.key)),
                },
        });
      }
    }
    return {
      rows,
      notes: [
        `${perRep} sequential runs per repetition, each in a new conversation, ${reps} repetitions after one warm-up; the WebSocket is open before startRun, SSE opens one request per subscription`,
      ],
    };
  },
};
