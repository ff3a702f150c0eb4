// Scenario: several instances. Two runledger processes (A and B) on one real
// PostgreSQL and one real Redis (scripts/services.mjs), beside one runledger
// process on a SQLite file with no Redis, as the other scenarios run it:
//
// - relay: a run executes on A and its subscriber is on B (graphql-ws), beside
//   the subscriber on A (same two instances: the event still goes through
//   Redis, but not to another process) and beside the single SQLite instance.
//   Token latency (arrival minus the model's send time) and CPU per token:
//   both instances' /proc utime + stime, and PostgreSQL's and Redis's own.
// - throughput: `conversations(first: 20)` under the throughput scenario's
//   client load (autocannon, 50 connections) on A against PostgreSQL, beside
//   the SQLite instance, each holding the same conversations made by the same
//   real runs.
import { percentiles, type Percentiles } from "../lib/stats.ts";
import { dist, scalar, type Row } from "../lib/report.ts";
import { startRunledger, type RunledgerProcess } from "../lib/runledger.ts";
import { gotEveryToken, type TokenLog } from "../lib/clients.ts";
import { relayThroughRunledger } from "../lib/relay-runs.ts";
import { startServices, type BenchServices } from "../lib/services.ts";
import { gqlOk } from "../../testkit/graphql.ts";
import { holdKey } from "../../testkit/fake-ollama.ts";
import { CONNECTIONS, CONVERSATIONS_PAGE, SEEDED_CONVERSATIONS, load, seedConversations, type Load } from "./throughput.ts";
import { LENGTH_SPREAD, relayPlans, totalTokens } from "./relay.ts";
import { repetitions, type Scenario } from "./scenario.ts";

const SCENARIO = "multi-instance";

// The relay scenario's two loads, so that the SQLite figure here is its figure.
const LOADS = [
  { runs: 1, intervalMs: 20, label: "graphql-ws, 1 run × 50 tokens/s" },
  { runs: 50, intervalMs: 100, label: "graphql-ws, 50 runs × 10 tokens/s" },
];

/** Where the run executes and where its subscriber is. */
type Setup = "cross" | "same" | "sqlite";
const SETUPS: Setup[] = ["cross", "same", "sqlite"];
const SETUP_LABEL: Record<Setup, string> = {
  cross: "PostgreSQL + Redis, run on A, subscriber on B",
  same: "PostgreSQL + Redis, run and subscriber on A",
  sqlite: "one instance on SQLite, no Redis",
};

interface RelayRep {
  latency: Percentiles;
  /** runledger processes (A and B, or the SQLite one), ms per token. */
  serverCpu: number;
  /** PostgreSQL + Redis, ms per token; 0 for SQLite. */
  servicesCpu: number;
  missing: number;
}

export const multiInstance: Scenario = {
  name: SCENARIO,
  title: "Several instances: relay across instances, conversations page on PostgreSQL",
  async run(options) {
    const reps = repetitions(options, 4);
    const tokensFor = (runs: number) => (runs === 1 ? 100 : 20) / (options.quick ? 2 : 1);
    const seconds = options.quick ? 2 : 4;
    const throughputReps = repetitions(options, 3);
    const relay = new Map<string, RelayRep[]>();
    const pageLoads: Record<"postgres" | "sqlite", Load[]> = { postgres: [], sqlite: [] };
    const pagePostgresCpu: number[] = [];

    let services: BenchServices | undefined;
    const servers: RunledgerProcess[] = [];
    try {
      services = await startServices(options.log);
      const env = { REDIS_URL: services.redisUrl };
      const profile = (name: string) => (options.cpuProfile ? `${SCENARIO}-${name}` : undefined);
      // Both at once on an empty database, as a deployment starts: one migrates, under PostgreSQL's advisory lock.
      const starting = [
        startRunledger({ modelUrl: options.modelUrl, databaseUrl: services.postgresUrl, env, cpuProfile: profile("a") }),
        startRunledger({ modelUrl: options.modelUrl, databaseUrl: services.postgresUrl, env, cpuProfile: profile("b") }),
        startRunledger({ modelUrl: options.modelUrl, cpuProfile: profile("sqlite") }),
      ];
      // Keep every one that started, so that one failing to start does not leave the others running.
      const started = await Promise.allSettled(starting);
      for (const s of started) if (s.status === "fulfilled") servers.push(s.value);
      const failed = started.find((s) => s.status === "rejected");
      if (failed) throw (failed as PromiseRejectedResult).reason;
      const [a, b, single] = servers as [RunledgerProcess, RunledgerProcess, RunledgerProcess];
      const endpoints = (setup: Setup) => (setup === "sqlite" ? [single, single] : setup === "same" ? [a, a] : [a, b]) as [RunledgerProcess, RunledgerProcess];
      const serverCpu = (setup: Setup) => (setup === "sqlite" ? single.cpuMs() : a.cpuMs() + b.cpuMs());
      const servicesCpu = () => {
        const cpu = services!.cpuMs();
        return cpu.postgres + cpu.redis;
      };

      // Throughput first, while each database holds exactly the seeded conversations.
      await seedConversations(a.url);
      await seedConversations(single.url);
      const body = JSON.stringify({ query: CONVERSATIONS_PAGE.query });
      const counts = await Promise.all([a, single].map((s) => gqlOk(s.url, "{ conversations(first: 1) { totalCount } }")));
      for (const { conversations } of counts) {
        if (conversations.totalCount !== SEEDED_CONVERSATIONS)
          throw new Error(`expected ${SEEDED_CONVERSATIONS} conversations, found ${conversations.totalCount}`);
      }
      await load(a, `${a.url}/graphql`, body, 1); // warm-up
      await load(single, `${single.url}/graphql`, body, 1);
      for (let rep = 0; rep < throughputReps; rep++) {
        // Alternate which goes first, so that a drift in the machine's load does not favour one.
        for (const backend of rep % 2 ? (["sqlite", "postgres"] as const) : (["postgres", "sqlite"] as const)) {
          const server = backend === "postgres" ? a : single;
          const before = servicesCpu();
          const result = await load(server, `${server.url}/graphql`, body, seconds);
          if (backend === "postgres") pagePostgresCpu.push((servicesCpu() - before) / Math.max(1, result.latency.n));
          pageLoads[backend].push(result);
          options.log(
            `  rep ${rep + 1}/${throughputReps} conversations(first: 20) on ${backend}: ${Math.round(result.rps)} req/s, ${result.cpuPerRequest.toFixed(3)} ms runledger CPU/request (${result.failures} failed)`,
          );
        }
      }

      // Warm-up, at both loads: the first runs pay for module loading and JIT
      // in every process, and the first burst of runs for the connections and
      // readers that many runs at once need (pools, Redis feeds).
      for (const setup of SETUPS) {
        const [startOn, subscribeOn] = endpoints(setup);
        for (const l of LOADS) {
          const key = holdKey(`${SCENARIO}-warm-up`);
          await relayThroughRunledger(startOn.url, options.modelUrl, "ws", relayPlans(l.runs, l.intervalMs, 5, key), key, subscribeOn.url);
        }
      }
      for (let rep = 0; rep < reps; rep++) {
        for (const l of LOADS) {
          const tokens = tokensFor(l.runs);
          // A different setup goes first each repetition, for the same reason as above.
          const order = SETUPS.map((_, i) => SETUPS[(i + rep) % SETUPS.length]!);
          for (const setup of order) {
            const [startOn, subscribeOn] = endpoints(setup);
            const key = holdKey(`${SCENARIO}-${rep}`);
            const runPlans = relayPlans(l.runs, l.intervalMs, tokens, key);
            const serverBefore = serverCpu(setup);
            const servicesBefore = setup === "sqlite" ? 0 : servicesCpu();
            const logs: TokenLog[] = await relayThroughRunledger(startOn.url, options.modelUrl, "ws", runPlans, key, subscribeOn.url);
            const n = totalTokens(runPlans);
            const result: RelayRep = {
              latency: percentiles(logs.flatMap((log) => log.latencies)),
              serverCpu: (serverCpu(setup) - serverBefore) / n,
              servicesCpu: setup === "sqlite" ? 0 : (servicesCpu() - servicesBefore) / n,
              missing: logs.filter((log, i) => !gotEveryToken(log, runPlans[i]!.tokens) || log.finalStatus !== "COMPLETED").length,
            };
            const k = `${l.label}|${setup}`;
            relay.set(k, [...(relay.get(k) ?? []), result]);
            options.log(
              `  rep ${rep + 1}/${reps} ${l.label}, ${SETUP_LABEL[setup]}: p50 ${result.latency.p50.toFixed(2)} ms, p99 ${result.latency.p99.toFixed(2)} ms, ${result.serverCpu.toFixed(2)} ms runledger CPU/token${setup === "sqlite" ? "" : `, ${result.servicesCpu.toFixed(2)} ms PostgreSQL + Redis`}`,
            );
          }
        }
      }
    } finally {
      // Servers first, so that none of them sees its database vanish under it; then the services, whatever happened.
      await Promise.all(servers.map((s) => s.stop()));
      services?.stop();
    }

    const rows: Row[] = [];
    for (const l of LOADS) {
      const of = (setup: Setup) => relay.get(`${l.label}|${setup}`)!;
      const lost = SETUPS.map((s) => [s, of(s).reduce((n, r) => n + r.missing, 0)] as const).filter(([, n]) => n > 0);
      const notes = lost.length
        ? [`subscriber(s) that missed tokens or did not see COMPLETED: ${lost.map(([s, n]) => `${n} with ${SETUP_LABEL[s]}`).join(", ")}`]
        : undefined;
      const latency = (setup: Setup) =>
        dist(
          "ms",
          of(setup).map((r) => r.latency),
        );
      const cpu = (setup: Setup) =>
        scalar(
          "ms",
          of(setup).map((r) => r.serverCpu),
        );
      const servicesCpu = (setup: Setup) =>
        scalar(
          "ms",
          of(setup).map((r) => r.servicesCpu),
        );
      rows.push(
        {
          scenario: SCENARIO,
          case: l.label,
          metric: "token latency, run on A, subscriber on B (PostgreSQL + Redis)",
          runledger: latency("cross"),
          baseline: { label: "subscriber on A, same instances", measure: latency("same") },
          notes,
        },
        {
          scenario: SCENARIO,
          case: l.label,
          metric: "token latency, run on A, subscriber on B (PostgreSQL + Redis)",
          runledger: latency("cross"),
          baseline: { label: "one instance on SQLite", measure: latency("sqlite") },
        },
        {
          scenario: SCENARIO,
          case: l.label,
          metric: "CPU per token, both instances, run start and end included",
          runledger: cpu("cross"),
          baseline: { label: "subscriber on A, same instances", measure: cpu("same") },
        },
        {
          scenario: SCENARIO,
          case: l.label,
          metric: "CPU per token, both instances, run start and end included",
          runledger: cpu("cross"),
          baseline: { label: "one instance on SQLite (its process)", measure: cpu("sqlite") },
        },
        {
          scenario: SCENARIO,
          case: l.label,
          metric: "CPU per token in PostgreSQL + Redis, run on A, subscriber on B",
          runledger: servicesCpu("cross"),
          baseline: { label: "subscriber on A, same instances", measure: servicesCpu("same") },
        },
      );
    }
    const failures = (backend: "postgres" | "sqlite") => pageLoads[backend].reduce((n, r) => n + r.failures, 0);
    const failureNote = (["postgres", "sqlite"] as const)
      .filter((b) => failures(b) > 0)
      .map((b) => `${failures(b)} failed requests on ${b} (non-2xx, errors, timeouts)`);
    const page = CONVERSATIONS_PAGE.name;
    rows.push(
      {
        scenario: SCENARIO,
        case: `${page}, PostgreSQL`,
        metric: `requests/s, ${CONNECTIONS} connections`,
        runledger: scalar(
          "req/s",
          pageLoads.postgres.map((r) => r.rps),
          true,
        ),
        baseline: {
          label: "SQLite, same data and load",
          measure: scalar(
            "req/s",
            pageLoads.sqlite.map((r) => r.rps),
            true,
          ),
        },
        notes: failureNote.length ? failureNote : undefined,
      },
      {
        scenario: SCENARIO,
        case: `${page}, PostgreSQL`,
        metric: "request latency (p50 / p97.5 / p99)",
        runledger: dist(
          "ms",
          pageLoads.postgres.map((r) => r.latency),
        ),
        baseline: {
          label: "SQLite, same data and load",
          measure: dist(
            "ms",
            pageLoads.sqlite.map((r) => r.latency),
          ),
        },
      },
      {
        scenario: SCENARIO,
        case: `${page}, PostgreSQL`,
        metric: "server CPU per request (runledger)",
        runledger: scalar(
          "ms",
          pageLoads.postgres.map((r) => r.cpuPerRequest),
        ),
        baseline: {
          label: "SQLite, same data and load",
          measure: scalar(
            "ms",
            pageLoads.sqlite.map((r) => r.cpuPerRequest),
          ),
        },
      },
      {
        scenario: SCENARIO,
        case: `${page}, PostgreSQL`,
        metric: "CPU per request in PostgreSQL + Redis",
        runledger: scalar("ms", pagePostgresCpu),
      },
    );
    return {
      rows,
      notes: [
        `relay: ${tokensFor(1)} tokens for 1 run; ${tokensFor(50)} to ${tokensFor(50) + LENGTH_SPREAD - 1} per run for 50 runs; ${reps} repetitions; one graphql-ws subscriber per run; streams start once every run is set up and subscribed; CPU from /proc (runledger: utime + stime of A and B, or of the SQLite process; PostgreSQL: the postmaster, its live workers and backends and those it reaped)`,
        `${page}: autocannon in the harness process, ${CONNECTIONS} connections, ${seconds} s per repetition, ${throughputReps} repetitions, against A alone; ${SEEDED_CONVERSATIONS} conversations made by the same real runs in each database`,
        "PostgreSQL and Redis from scripts/services.mjs: loopback, fsync and synchronous_commit off, no Redis persistence",
      ],
    };
  },
};
