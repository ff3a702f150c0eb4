// Scenario: retention prunes a large database under live traffic. A SQLite
// file is seeded with 100,000 checkpoints (10 conversations × 1,000 runs × 10
// checkpoints, bench/lib/seed.ts: LangGraph's own format), and a PostgreSQL
// database (scripts/services.mjs) with as many, through PostgresSaver; then a server starts on each with RETENTION_CHECKPOINTS_KEEP=10; its first sweep comes
// RETENTION_SWEEP_MS after start, so the first seconds are traffic without
// pruning (the baseline) and the rest traffic while the sweep prunes. Traffic:
// GET /health every 20 ms, and runs one after another, each timed from
// startRun sent to its first token over graphql-ws. Reported: rows deleted,
// the time the sweep took, the file's size before and after (the WAL folded
// in; a new file uses auto_vacuum=INCREMENTAL, so freed pages go back; on
// PostgreSQL the checkpoint tables, after the sweep and after VACUUM FULL), and
// /health and first-token latency before and during the prune.
import fs from "node:fs";
import Database from "better-sqlite3";
import { percentiles } from "../lib/stats.ts";
import { dist, scalar, type Row } from "../lib/report.ts";
import { tempDatabaseUrl } from "../../testkit/processes.ts";
import { startRunledger, type RunledgerProcess } from "../lib/runledger.ts";
import { startServices } from "../lib/services.ts";
import { seedPostgresConversation } from "../lib/seed-postgres.ts";
import { openPostgresStorage } from "../../src/storage/open-postgres.ts";
import pg from "pg";
import { nowMs } from "../../testkit/clock.ts";
import { startRun, wsClient } from "../../testkit/graphql.ts";
import { connected, subscribeTokens } from "../lib/clients.ts";
import { planMessage, type StreamPlan } from "../../testkit/fake-ollama.ts";
import { parsePrometheus, sampleValue } from "../../testkit/prometheus.ts";
import { seedConversation } from "../lib/seed.ts";
import { sleep, type Scenario, type ScenarioOptions } from "./scenario.ts";

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

/** The checkpoint tables' size on PostgreSQL, in MiB; `vacuum` first (FULL rewrites them, giving space back). */
async function postgresMiB(url: string, vacuum: "" | "VACUUM" | "VACUUM FULL"): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    if (vacuum) await client.query(`${vacuum} checkpoints, checkpoint_blobs, checkpoint_writes`);
    const { rows } = await client.query<{ bytes: string }>(
      `SELECT sum(pg_total_relation_size(t))::text AS bytes FROM unnest(ARRAY['checkpoints', 'checkpoint_blobs', 'checkpoint_writes']) t`,
    );
    return Number(rows[0]!.bytes) / 2 ** 20;
  } finally {
    await client.end();
  }
}

interface Traffic {
  deleted: number;
  seconds: number;
  health: { baseline: ReturnType<typeof percentiles>; during: ReturnType<typeof percentiles> };
  firstToken: { baseline: ReturnType<typeof percentiles>; during: ReturnType<typeof percentiles> };
}

/** Starts a server with the policy, drives traffic until its first sweep is counted, and stops it. */
async function pruneUnderTraffic(start: (env: Record<string, string>) => Promise<RunledgerProcess>): Promise<Traffic> {
  const server = await start({ RETENTION_CHECKPOINTS_KEEP: String(KEEP), RETENTION_SWEEP_MS: String(BASELINE_MS) });
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
  const phase = (samples: { at: number; ms: number }[], from: number, to: number) =>
    percentiles(samples.filter((s) => s.at >= from && s.at < to).map((s) => s.ms));
  return {
    deleted,
    seconds: (sweepEnd - sweepStart) / 1000,
    health: { baseline: phase(health, started, started + BASELINE_MS), during: phase(health, sweepStart, sweepEnd) },
    firstToken: { baseline: phase(firstToken, started, started + BASELINE_MS), during: phase(firstToken, sweepStart, sweepEnd) },
  };
}

function rowsOf(caseName: string, traffic: Traffic, size: { label: string; before: number; after: number }[]): Row[] {
  return [
    { scenario: "retention", case: caseName, metric: "checkpoints deleted", runledger: scalar("rows", [traffic.deleted]) },
    {
      scenario: "retention",
      case: caseName,
      metric: "sweep time (first delete → sweep counted, polled every 50 ms)",
      runledger: scalar("s", [traffic.seconds]),
    },
    ...size.map(({ label, before, after }) => ({
      scenario: "retention",
      case: caseName,
      metric: label,
      runledger: scalar("MiB", [after]),
      baseline: { label: "before the sweep", measure: scalar("MiB", [before]) },
    })),
    {
      scenario: "retention",
      case: caseName,
      metric: "GET /health latency while pruning",
      runledger: dist("ms", [traffic.health.during]),
      baseline: { label: "same server, before the sweep", measure: dist("ms", [traffic.health.baseline]) },
    },
    {
      scenario: "retention",
      case: caseName,
      metric: "startRun sent → first token (graphql-ws) while pruning",
      runledger: dist("ms", [traffic.firstToken.during]),
      baseline: { label: "same server, before the sweep", measure: dist("ms", [traffic.firstToken.baseline]) },
    },
  ];
}

async function sqliteCase(options: ScenarioOptions): Promise<{ rows: Row[]; note: string }> {
  const conversations = options.quick ? 2 : 10;
  const runsEach = options.quick ? 200 : 1_000;
  const database = tempDatabaseUrl("runledger-bench-retention-");
  try {
    const seededAt = nowMs();
    let checkpoints = 0;
    for (let i = 0; i < conversations; i++) checkpoints += (await seedConversation(database.file, { runs: runsEach, wholeThread: false })).checkpoints;
    options.log(`  SQLite: seeded ${checkpoints} checkpoints in ${((nowMs() - seededAt) / 1000).toFixed(1)} s`);
    const before = fileMiB(database.file);
    const traffic = await pruneUnderTraffic((env) => startRunledger({ modelUrl: options.modelUrl, databaseFile: database.file, env }));
    const after = fileMiB(database.file);
    options.log(`  SQLite: deleted ${traffic.deleted} in ~${traffic.seconds.toFixed(1)} s; ${before.mib.toFixed(1)} MiB → ${after.mib.toFixed(1)} MiB`);
    const caseName = `SQLite, ${checkpoints.toLocaleString("en")} checkpoints, keep ${KEEP}`;
    return {
      rows: rowsOf(caseName, traffic, [{ label: "database file, WAL folded in", before: before.mib, after: after.mib }]),
      note: `SQLite: the file is made with auto_vacuum=INCREMENTAL, so the sweep's incremental vacuum gives freed pages back (free pages after: ${after.freePages}).`,
    };
  } finally {
    database.remove();
  }
}

async function postgresCase(options: ScenarioOptions): Promise<{ rows: Row[]; note: string }> {
  const conversations = options.quick ? 2 : 10;
  const runsEach = options.quick ? 100 : 1_000;
  const services = await startServices(options.log);
  try {
    const seededAt = nowMs();
    const storage = await openPostgresStorage(services.postgresUrl);
    let checkpoints = 0;
    try {
      const seeded = await Promise.all(Array.from({ length: conversations }, () => seedPostgresConversation(storage, runsEach)));
      checkpoints = seeded.reduce((sum, s) => sum + s.checkpoints, 0);
    } finally {
      await storage.close();
    }
    options.log(`  PostgreSQL: seeded ${checkpoints} checkpoints in ${((nowMs() - seededAt) / 1000).toFixed(1)} s`);
    const before = await postgresMiB(services.postgresUrl, "VACUUM");
    const traffic = await pruneUnderTraffic((env) => startRunledger({ modelUrl: options.modelUrl, databaseUrl: services.postgresUrl, env }));
    const afterSweep = await postgresMiB(services.postgresUrl, "VACUUM");
    const afterFull = await postgresMiB(services.postgresUrl, "VACUUM FULL");
    options.log(
      `  PostgreSQL: deleted ${traffic.deleted} in ~${traffic.seconds.toFixed(1)} s; ${before.toFixed(1)} → ${afterSweep.toFixed(1)} (VACUUM) → ${afterFull.toFixed(1)} MiB (VACUUM FULL)`,
    );
    const caseName = `PostgreSQL, ${checkpoints.toLocaleString("en")} checkpoints, keep ${KEEP}`;
    return {
      rows: rowsOf(caseName, traffic, [
        { label: "checkpoint tables after the sweep and VACUUM (space reusable, not returned)", before, after: afterSweep },
        { label: "checkpoint tables after VACUUM FULL (server stopped)", before, after: afterFull },
      ]),
      note: "PostgreSQL: sizes are pg_total_relation_size of checkpoints, checkpoint_blobs and checkpoint_writes; seeded through PostgresSaver one checkpoint at a time.",
    };
  } finally {
    services.stop();
  }
}

export const retentionScenario: Scenario = {
  name: "retention",
  title: "pruning a 100,000-checkpoint database under live traffic",
  async run(options) {
    const sqlite = await sqliteCase(options);
    const postgres = await postgresCase(options);
    return { rows: [...sqlite.rows, ...postgres.rows], notes: [sqlite.note, postgres.note] };
  },
};
