// Scenario 4, run ↔ checkpoint correlation: one conversation seeded with many
// runs of ten checkpoints each (bench/lib/seed.ts: rows written directly, in
// LangGraph's and runledger's formats), then
//   conversation { runs(first: 100) { edges { node { id checkpoints { run { id } } } } } }
// timed over HTTP and its SQL statements counted in the server (every
// connection, at the driver). The baseline is the naive way, run in the
// harness straight on the file: one query for the page of runs, one per run for
// its checkpoints, one per checkpoint for its run; prepared once, no HTTP and
// no GraphQL, so it is the naive approach at its fastest.
import type Database from "better-sqlite3";
import { percentiles, type Percentiles } from "../lib/stats.ts";
import { dist, scalar, type Row } from "../lib/report.ts";
import { tempDatabaseUrl } from "../../testkit/processes.ts";
import { ask, startRunledger } from "../lib/runledger.ts";
import { gqlOk } from "../../testkit/graphql.ts";
import { nowMs } from "../../testkit/clock.ts";
import { CHECKPOINTS_PER_RUN, seedConversation } from "../lib/seed.ts";
import { openSqlite } from "../../src/storage/sqlite/database.ts";
import { repetitions, type Scenario } from "./scenario.ts";

const PAGE = 100;
const QUERY = /* GraphQL */ `
  query Correlation($id: ID!, $n: Int) { conversation(id: $id) { runs(first: $n) { edges { node { id checkpoints { run { id } } } } } } }
`;

/** The naive resolver chain, statement by statement. Returns the statements it ran. */
function naive(db: Database.Database, conversationId: string, page: number): { statements: number; runs: { id: string; checkpoints: (string | null)[] }[] } {
  const runsPage = db.prepare("SELECT id, start_mark, end_mark FROM runs WHERE conversation_id = ? ORDER BY started_at, id LIMIT ?");
  const checkpointsOf = db.prepare(
    `SELECT checkpoint_id, json_extract(CAST(checkpoint AS TEXT), '$.ts') AS ts, json_extract(CAST(metadata AS TEXT), '$.step') AS step
     FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id >= ? AND checkpoint_id <= ? ORDER BY checkpoint_id`,
  );
  const runOf = db.prepare("SELECT id FROM runs WHERE conversation_id = ? AND start_mark <= ? AND (end_mark IS NULL OR end_mark >= ?) LIMIT 1");
  let statements = 1;
  const runs = (runsPage.all(conversationId, page) as { id: string; start_mark: string; end_mark: string }[]).map((run) => {
    statements += 1;
    const checkpoints = (checkpointsOf.all(conversationId, run.start_mark, run.end_mark) as { checkpoint_id: string }[]).map((c) => {
      statements += 1;
      return (runOf.get(conversationId, c.checkpoint_id, c.checkpoint_id) as { id: string } | undefined)?.id ?? null;
    });
    return { id: run.id, checkpoints };
  });
  return { statements, runs };
}

interface CaseResult {
  latency: Percentiles[];
  naiveLatency: Percentiles[];
  statements: { page: number; small: number };
  naiveStatements: number;
  seeded: { checkpoints: number; seconds: number; bytes: number };
}

async function measureCase(
  options: { modelUrl: string; cpuProfile: boolean; quick: boolean },
  runs: number,
  wholeThread: boolean,
  reps: number,
  perRep: number,
  log: (m: string) => void,
): Promise<CaseResult> {
  const database = tempDatabaseUrl("runledger-bench-");
  const seedStart = nowMs();
  const { conversationId, checkpoints } = await seedConversation(database.file, { runs, wholeThread });
  const seconds = (nowMs() - seedStart) / 1000;
  const probe = openSqlite(database.file, { readonly: true });
  const bytes = (probe.prepare("SELECT SUM(LENGTH(checkpoint)) AS b FROM checkpoints").get() as { b: number }).b;
  log(`  seeded ${runs} runs, ${checkpoints} checkpoints (${(bytes / 2 ** 20).toFixed(1)} MiB of checkpoint blobs) in ${seconds.toFixed(1)} s`);
  const server = await startRunledger({
    modelUrl: options.modelUrl,
    probe: true,
    databaseFile: database.file,
    cpuProfile: options.cpuProfile ? `correlation-${wholeThread ? "whole" : "own"}-runledger` : undefined,
    // No heartbeat writes while statements are counted.
    env: { RUN_HEARTBEAT_MS: "600000", RUN_LEASE_MS: "1200000" },
  });
  try {
    const run = (n: number) => gqlOk(server.url, QUERY, { id: conversationId, n });
    // The answer must be the correlation, complete: every checkpoint of every run points back to it.
    const answer = await run(PAGE);
    const edges = answer.conversation.runs.edges as { node: { id: string; checkpoints: { run: { id: string } | null }[] } }[];
    const expected = Math.min(PAGE, runs);
    if (edges.length !== expected) throw new Error(`expected ${expected} runs, got ${edges.length}`);
    for (const { node } of edges) {
      if (node.checkpoints.length !== CHECKPOINTS_PER_RUN || node.checkpoints.some((c) => c.run?.id !== node.id)) {
        throw new Error(`run ${node.id}: checkpoints do not correlate: ${JSON.stringify(node.checkpoints)}`);
      }
    }
    const count = async (n: number) => {
      const before = await ask<number>(server, { cmd: "statements" });
      await run(n);
      return (await ask<number>(server, { cmd: "statements" })) - before;
    };
    const page = await count(PAGE);
    const small = await count(10);

    const db = openSqlite(database.file, { readonly: true });
    const check = naive(db, conversationId, PAGE);
    if (
      check.runs.length !== expected ||
      check.runs.some((r, i) => r.id !== edges[i]!.node.id || r.checkpoints.length !== CHECKPOINTS_PER_RUN || r.checkpoints.some((c) => c !== r.id))
    ) {
      throw new Error("the naive baseline does not give the same answer");
    }
    const latency: Percentiles[] = [];
    const naiveLatency: Percentiles[] = [];
    for (let i = 0; i < 3; i++) await run(PAGE);
    for (let rep = 0; rep < reps; rep++) {
      const ours: number[] = [];
      const theirs: number[] = [];
      for (let i = 0; i < perRep; i++) {
        let t = nowMs();
        await run(PAGE);
        ours.push(nowMs() - t);
        t = nowMs();
        naive(db, conversationId, PAGE);
        theirs.push(nowMs() - t);
      }
      latency.push(percentiles(ours));
      naiveLatency.push(percentiles(theirs));
      log(
        `  rep ${rep + 1}/${reps}: runledger p50 ${latency.at(-1)!.p50.toFixed(1)} ms, p95 ${latency.at(-1)!.p95.toFixed(1)} ms; naive p50 ${naiveLatency.at(-1)!.p50.toFixed(1)} ms`,
      );
    }
    db.close();
    probe.close();
    return { latency, naiveLatency, statements: { page, small }, naiveStatements: check.statements, seeded: { checkpoints, seconds, bytes } };
  } catch (error) {
    throw new Error(`${(error as Error).message}\nserver output:\n${server.output().slice(-4000)}`);
  } finally {
    await server.stop();
    database.remove();
  }
}

export const correlation: Scenario = {
  name: "correlation",
  title: "Run ↔ checkpoint correlation",
  async run(options) {
    const reps = repetitions(options, 3);
    const perRep = options.quick ? 5 : 10;
    const cases = [
      { runs: options.quick ? 300 : 1000, wholeThread: false },
      { runs: options.quick ? 20 : 50, wholeThread: true },
    ];
    const rows: Row[] = [];
    const notes: string[] = [];
    for (const c of cases) {
      const label = `${c.runs.toLocaleString("en-US")} runs × ${CHECKPOINTS_PER_RUN} checkpoints, ${c.wholeThread ? "whole thread in every checkpoint" : "own run's messages per checkpoint"}`;
      options.log(` ${label}`);
      const r = await measureCase(options, c.runs, c.wholeThread, reps, perRep, options.log);
      const latency = dist("ms", r.latency);
      const constant = r.statements.page === r.statements.small;
      rows.push({
        scenario: "correlation",
        case: label,
        metric: `runs(first: ${PAGE}) { checkpoints { run } } latency`,
        runledger: latency,
        baseline: { label: "naive: a query per run and per checkpoint, in-process SQL", measure: dist("ms", r.naiveLatency) },
        target: { text: "p95 ≤ 100 ms", met: latency.kind === "dist" && latency.median.p95 <= 100 },
      });
      rows.push({
        scenario: "correlation",
        case: label,
        metric: `SQL statements per response (first: ${PAGE})`,
        runledger: scalar("statements", [r.statements.page]),
        baseline: { label: "naive", measure: scalar("statements", [r.naiveStatements]) },
        target: { text: "constant in the number of runs", met: constant },
        notes: [`first: 10 takes ${r.statements.small} statements, first: ${PAGE} ${r.statements.page}`],
      });
      notes.push(
        `${label}: ${r.seeded.checkpoints.toLocaleString("en-US")} checkpoints, ${(r.seeded.bytes / 2 ** 20).toFixed(1)} MiB of checkpoint blobs, seeded in ${r.seeded.seconds.toFixed(1)} s`,
      );
    }
    notes.push(
      `${perRep} sequential queries per repetition, ${reps} repetitions, after 3 warm-up queries; statements counted at the SQLite driver in the server process`,
    );
    return { rows, notes };
  },
};
