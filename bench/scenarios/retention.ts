// Scenario: retention prunes a large SQLite database under live traffic. The
// file is seeded with 100,000 checkpoints (10 conversations × 1,000 runs × 10
// checkpoints, bench/lib/seed.ts: LangGraph's own format), then a server
// starts on it with RETENTION_CHECKPOINTS_KEEP=10; its first sweep comes
// RETENTION_SWEEP_MS after start, so the first seconds are traffic without
// pruning (the baseline) and the rest traffic while the sweep prunes. Traffic:
// GET /health every 20 ms, and runs one after another, each timed from
// startRun sent to its first token over graphql-ws. Reported: rows deleted,
// the time the sweep took, the file's size before and after (the WAL folded
// in; a new file uses auto_vacuum=INCREMENTAL, so freed pages go back), and
// /health and first-token latency before and during the prune.
import fs from "node:fs";
import Database from "better-sqlite3";
import { percentiles } from "../lib/stats.ts";
import { dist, scalar, type Row } from "../lib/report.ts";
import { tempDatabaseUrl } from "../../testkit/processes.ts";
import { startRunledger } from "../lib/runledger.ts";
import { nowMs } from "../../testkit/clock.ts";
import { startRun, wsClient } from "../../testkit/graphql.ts";
import { connected, subscribeTokens } from "../lib/clients.ts";
import { planMessage, type StreamPlan } from "../../testkit/fake-ollama.ts";
import { parsePrometheus, sampleValue } from "../../testkit/prometheus.ts";
import { seedConversation } from "../lib/seed.ts";
import { sleep, type Scenario } from "./scenario.ts";

const PLAN: StreamPlan = { tokens: 3, intervalMs: 0, firstDelayMs: 0 };
const KEEP = 10;
const BASELINE_MS = 8_000;

/** The file's size with its WAL folded in, in MiB. */
function fileMiB(file: string): { mib: number; freePages: number } {
  const db = new Database(file);
  try {
    db.pragma("wal_checkpoint(TRUNCATE)");
    return { mib: fs.statSync(file).size / 2 ** 20, freePages: db.pragma("freelist_count", { simple: true }) as number };
  } finally {
    db.close();
  }
}

export const retentionScenario: Scenario = {
  name: "retention",
  title: "pruning a 100,000-checkpoint SQLite database under live traffic",
  async run(options) {
    const conversations = options.quick ? 2 : 10;
    const runsEach = options.quick ? 200 : 1_000;
    const database = tempDatabaseUrl("runledger-bench-retention-");
    const seededAt = nowMs();
    let checkpoints = 0;
    for (let i = 0; i < conversations; i++) checkpoints += (await seedConversation(database.file, { runs: runsEach, wholeThread: false })).checkpoints;
    options.log(`  seeded ${checkpoints} checkpoints in ${((nowMs() - seededAt) / 1000).toFixed(1)} s`);
    const before = fileMiB(database.file);
    const server = await startRunledger({
      modelUrl: options.modelUrl,
      databaseFile: database.file,
      env: { RETENTION_CHECKPOINTS_KEEP: String(KEEP), RETENTION_SWEEP_MS: String(BASELINE_MS) },
    });
    const health: { at: number; ms: number }[] = [];
    const firstToken: { at: number; ms: number }[] = [];
    let stop = false;
    let sweepStart = NaN;
    let sweepEnd = NaN;
    let deleted = 0;
    const started = nowMs();
    try {
      const healthLoop = (async () => {
        while (!stop) {
          const t = nowMs();
          await (await fetch(`${server.url}/health`)).arrayBuffer();
          health.push({ at: t, ms: nowMs() - t });
          await sleep(20);
        }
      })();
      const runLoop = (async () => {
        const client = wsClient(server.url, { lazy: false });
        await connected(client);
        while (!stop) {
          const t = nowMs();
          const { runId } = await startRun(server.url, planMessage(PLAN));
          const log = await subscribeTokens(client, runId).done;
          if (log.firstTokenAt !== null) firstToken.push({ at: t, ms: log.firstTokenAt - t });
        }
        await client.dispose();
      })();
      // The sweep is under way once rows are deleted, and over when a sweep has been counted.
      for (;;) {
        const families = parsePrometheus(await (await fetch(`${server.url}/metrics`)).text());
        deleted = sampleValue(families, "runledger_retention_deleted_rows_total", { table: "checkpoints" }) ?? 0;
        if (deleted > 0 && Number.isNaN(sweepStart)) sweepStart = nowMs();
        if ((sampleValue(families, "runledger_retention_sweeps_total", { outcome: "swept" }) ?? 0) >= 1) {
          sweepEnd = nowMs();
          break;
        }
        if (nowMs() - started > 600_000) throw new Error("the retention sweep did not finish in 10 minutes");
        await sleep(50);
      }
      if (Number.isNaN(sweepStart)) sweepStart = sweepEnd;
      stop = true;
      await Promise.all([healthLoop, runLoop]);
    } finally {
      stop = true;
      await server.stop();
    }
    const after = fileMiB(database.file);
    database.remove();
    const phase = (samples: { at: number; ms: number }[], from: number, to: number) =>
      percentiles(samples.filter((s) => s.at >= from && s.at < to).map((s) => s.ms));
    const seconds = (sweepEnd - sweepStart) / 1000;
    options.log(
      `  deleted ${deleted} checkpoints in ~${seconds.toFixed(1)} s; ${before.mib.toFixed(1)} MiB → ${after.mib.toFixed(1)} MiB (free pages ${before.freePages} → ${after.freePages})`,
    );
    const caseName = `SQLite, ${checkpoints.toLocaleString("en")} checkpoints, keep ${KEEP}`;
    const rows: Row[] = [
      { scenario: "retention", case: caseName, metric: "checkpoints deleted", runledger: scalar("rows", [deleted]) },
      { scenario: "retention", case: caseName, metric: "sweep time (first delete → sweep counted, polled every 50 ms)", runledger: scalar("s", [seconds]) },
      {
        scenario: "retention",
        case: caseName,
        metric: "database file, WAL folded in",
        runledger: scalar("MiB", [after.mib]),
        baseline: { label: "before the sweep", measure: scalar("MiB", [before.mib]) },
      },
      {
        scenario: "retention",
        case: caseName,
        metric: "GET /health latency while pruning",
        runledger: dist("ms", [phase(health, sweepStart, sweepEnd)]),
        baseline: { label: "same server, before the sweep", measure: dist("ms", [phase(health, started, started + BASELINE_MS)]) },
      },
      {
        scenario: "retention",
        case: caseName,
        metric: "startRun sent → first token (graphql-ws) while pruning",
        runledger: dist("ms", [phase(firstToken, sweepStart, sweepEnd)]),
        baseline: { label: "same server, before the sweep", measure: dist("ms", [phase(firstToken, started, started + BASELINE_MS)]) },
      },
    ];
    return {
      rows,
      notes: [
        `The file is made with auto_vacuum=INCREMENTAL: the sweep's incremental vacuum gives freed pages back (free pages after: ${after.freePages}).`,
        "PostgreSQL is not measured here: bench/lib/seed.ts writes SQLite files only.",
      ],
    };
  },
};
