// Scenario: a burst of starts on one instance, and on two sharing one SQLite
// file, each server the build (`node dist/main.js`, as a service runs it). N
// startRun mutations arrive together (100 in flight at a time, spread
// over the instances) against a model endpoint that serves 64 runs at once
// (MODEL_CONCURRENCY 64 across the instances; MAX_ACTIVE_RUNS its default on each): every
// answer must be a StartRunSuccess and every run must complete. Measured: the
// largest RSS peak of an instance (from /proc), GET /health's latency during
// the burst (asked by a process of its own, as a load balancer asks), the
// time to first token of admitted runs (stored per run, counted from
// admission), and request to end (the queue wait included), read from the
// database file afterwards.
import Database from "better-sqlite3";
import { percentiles, type Percentiles } from "../lib/stats.ts";
import { dist, scalar, type Row } from "../lib/report.ts";
import { startRunledger } from "../lib/runledger.ts";
import { sleep, type Scenario } from "./scenario.ts";
import { buildServer, DIST_MAIN } from "../../testkit/built.ts";
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** GET /health every 50 ms from a process of its own (lib/poll-health.mjs) until stop(), which answers the latencies. */
function pollHealth(url: string): { stop(): Promise<number[]> } {
  const script = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "lib", "poll-health.mjs");
  const child = spawn(process.execPath, [script, url], { stdio: ["pipe", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  let stopped: Promise<number[]> | undefined;
  return {
    stop() {
      child.stdin.end();
      stopped ??= exited.then(() => JSON.parse(out || "[]") as number[]);
      return stopped;
    },
  };
}

const CAPACITY = 64;
const IN_FLIGHT = 100;
const TOKENS = 20;
const INTERVAL_MS = 20;
const START = JSON.stringify({
  query: `mutation ($message: String!) { startRun(input: { message: $message }) { __typename } }`,
});

interface BurstResult {
  runs: number;
  accepted: number;
  completed: number;
  rssPeakMiB: number;
  rssStartMiB: number;
  health: Percentiles;
  ttft: Percentiles;
  requestToEnd: Percentiles;
  wallMs: number;
}

async function burst(modelUrl: string, runs: number, instances: 1 | 2, log: (message: string) => void): Promise<BurstResult> {
  // LOG_LEVEL stays info: the start is told by its "runledger listening" line.
  // MAX_ACTIVE_RUNS and ADMISSION_LOOP_DELAY_MS empty: their defaults, as a deployment has them.
  const env = { MODEL_CONCURRENCY: String(CAPACITY), MAX_ACTIVE_RUNS: "", ADMISSION_LOOP_DELAY_MS: "" };
  const server = await startRunledger({ modelUrl, env });
  const servers = instances === 1 ? [server] : [server, await startRunledger({ modelUrl, env, databaseFile: server.databaseFile })];
  // Per process: a cluster's (WORKERS > 1) primary and each worker count apart.
  const rssStart = Math.max(...servers.flatMap((s) => s.rssBytesEach()));
  let rssPeak = rssStart;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      rssPeak = Math.max(rssPeak, ...servers.flatMap((s) => s.rssBytesEach()));
      await sleep(50);
    }
  })();
  const health = pollHealth(`${server.url}/health`);
  const started = performance.now();
  let accepted = 0;
  try {
    const message = `bench ${JSON.stringify({ tokens: TOKENS, intervalMs: INTERVAL_MS })}`;
    const body = JSON.stringify({ ...JSON.parse(START), variables: { message } });
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async (_, lane) => {
        const target = servers[lane % servers.length]!;
        while (next < runs) {
          next += 1;
          const answer = await fetch(`${target.url}/graphql`, { method: "POST", headers: { "content-type": "application/json" }, body }).then((r) => r.json());
          if (answer?.data?.startRun?.__typename === "StartRunSuccess") accepted += 1;
        }
      }),
    );
    log(`  ${runs} starts answered in ${Math.round(performance.now() - started)} ms; ${accepted} accepted`);
    const db = new Database(server.databaseFile, { readonly: true });
    try {
      const active = db.prepare(`SELECT count(*) AS n FROM runs WHERE status IN ('queued', 'running')`);
      for (let waited = 0; (active.get() as { n: number }).n > 0 && waited < 600_000; waited += 250) await sleep(250);
      const wallMs = performance.now() - started;
      const rows = db
        .prepare(`SELECT status, time_to_first_token_ms AS ttft, (julianday(finished_at) - julianday(started_at)) * 86400000.0 AS total FROM runs`)
        .all() as { status: string; ttft: number | null; total: number }[];
      return {
        runs,
        accepted,
        completed: rows.filter((r) => r.status === "completed").length,
        rssPeakMiB: rssPeak / 2 ** 20,
        rssStartMiB: rssStart / 2 ** 20,
        health: percentiles(await health.stop()),
        ttft: percentiles(rows.flatMap((r) => (r.ttft === null ? [] : [r.ttft]))),
        requestToEnd: percentiles(rows.map((r) => r.total)),
        wallMs,
      };
    } finally {
      db.close();
    }
  } finally {
    sampling = false;
    await sampler;
    await health.stop();
    for (const s of servers.slice().reverse()) await s.stop();
  }
}

export const burstScenario: Scenario = {
  name: "burst",
  title: "A burst of starts on one instance",
  async run(options) {
    // As a service runs (README, Production): the build under Node, without tsx and its loader thread (about 55 MiB).
    await buildServer();
    const before = process.env.RUNLEDGER_TEST_SERVER_BUILD;
    process.env.RUNLEDGER_TEST_SERVER_BUILD = DIST_MAIN;
    try {
      return await runCases(options);
    } finally {
      if (before === undefined) delete process.env.RUNLEDGER_TEST_SERVER_BUILD;
      else process.env.RUNLEDGER_TEST_SERVER_BUILD = before;
    }
  },
};

async function runCases(options: Parameters<Scenario["run"]>[0]): ReturnType<Scenario["run"]> {
  const cases: [number, 1 | 2][] = options.quick
    ? [
        [200, 1],
        [500, 1],
        [500, 2],
      ]
    : [
        [1_000, 1],
        [5_000, 1],
        [1_000, 2],
        [5_000, 2],
      ];
  const rows: Row[] = [];
  const notes: string[] = [];
  for (const [runs, instances] of cases) {
    const r = await burst(options.modelUrl, runs, instances, options.log);
    options.log(
      `  ${runs}: ${r.completed} completed, RSS ${r.rssStartMiB.toFixed(0)} → peak ${r.rssPeakMiB.toFixed(0)} MiB, /health p99 ${r.health.p99.toFixed(1)} ms, ttft p99 ${r.ttft.p99.toFixed(0)} ms`,
    );
    const c = `${runs.toLocaleString("en")} starts at once, ${instances === 1 ? "one instance" : "two instances on one SQLite file"}`;
    rows.push(
      {
        scenario: "burst",
        case: c,
        metric: "runs accepted and completed",
        runledger: scalar("runs", [r.completed], true),
        target: { text: `all ${runs} accepted and completed`, met: r.accepted === runs && r.completed === runs },
      },
      {
        scenario: "burst",
        case: c,
        metric: instances === 1 ? "server RSS peak (its largest process)" : "RSS peak of the larger instance (its largest process)",
        runledger: scalar("MiB", [r.rssPeakMiB]),
        baseline: { label: "the same process before the burst", measure: scalar("MiB", [r.rssStartMiB]) },
        target: { text: "under 300 MiB", met: r.rssPeakMiB < 300 },
      },
      {
        scenario: "burst",
        case: c,
        metric: "GET /health during the burst",
        runledger: dist("ms", [r.health]),
        target: { text: "p99 under 50 ms", met: r.health.p99 < 50 },
      },
      { scenario: "burst", case: c, metric: "time to first token of admitted runs", runledger: dist("ms", [r.ttft]) },
      { scenario: "burst", case: c, metric: "request to end, queue wait included", runledger: dist("ms", [r.requestToEnd]) },
    );
    notes.push(
      `${runs} starts on ${instances} instance${instances === 1 ? "" : "s"}: every run ${TOKENS} tokens at ${INTERVAL_MS} ms, the model ${CAPACITY} at once, MAX_ACTIVE_RUNS its default; all ended after ${Math.round(r.wallMs)} ms`,
    );
  }
  return { rows, notes };
}
