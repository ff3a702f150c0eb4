// Scenario 5, HTTP throughput: autocannon with 50 connections against
// `{ __typename }` and a `conversations(first: 20)` page, beside a plain Node
// HTTP server answering the same bytes (the floor of this machine and client)
// and, for `{ __typename }`, graphql-yoga alone with a one-field schema (what
// the GraphQL server costs before runledger adds anything). Server CPU per
// request is counted from /proc, so it holds on a busy machine too.
import autocannon from "autocannon";
import { dist, scalar, type Row } from "../lib/report.ts";
import { type Child } from "../../testkit/processes.ts";
import { startRunledger } from "../lib/runledger.ts";
import { gqlOk, sseClient, startRun } from "../../testkit/graphql.ts";
import { subscribeTokens } from "../lib/clients.ts";
import { startFloorProcess } from "../lib/floor-clients.ts";
import { planMessage } from "../../testkit/fake-ollama.ts";
import { repetitions, type Scenario } from "./scenario.ts";

export const CONNECTIONS = 50;
export const SEEDED_CONVERSATIONS = 40;

export const CONVERSATIONS_PAGE = {
  name: "conversations(first: 20)",
  query: "{ conversations(first: 20) { totalCount edges { cursor node { id title createdAt updatedAt messageCount } } pageInfo { hasNextPage endCursor } } }",
  target: 1000,
};

const QUERIES = [{ name: "{ __typename }", query: "{ __typename }", target: 3000 }, CONVERSATIONS_PAGE];

/** Real conversations, made by real runs, for the page to list. */
export async function seedConversations(url: string, count = SEEDED_CONVERSATIONS): Promise<void> {
  const client = sseClient(url);
  for (let i = 0; i < count; i++) {
    const { runId } = await startRun(url, planMessage({ tokens: 3, intervalMs: 0 }));
    await subscribeTokens(client, runId).done;
  }
  await client.dispose();
}

export interface Load {
  rps: number;
  /** Server CPU per request, in ms. */
  cpuPerRequest: number;
  latency: { p50: number; p95: number; p99: number; max: number; n: number };
  failures: number;
}

export async function load(server: Child, url: string, body: string, seconds: number, headers: Record<string, string> = {}): Promise<Load> {
  const cpuBefore = server.cpuMs();
  const result = await autocannon({
    url,
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/graphql-response+json", ...headers },
    body,
    connections: CONNECTIONS,
    duration: seconds,
  });
  return {
    rps: result.requests.average,
    cpuPerRequest: (server.cpuMs() - cpuBefore) / Math.max(1, result.requests.total),
    // autocannon keeps p97.5, not p95; the table's middle column is p97.5 for these rows.
    latency: { p50: result.latency.p50, p95: result.latency.p97_5, p99: result.latency.p99, max: result.latency.max, n: result.requests.total },
    failures: result.non2xx + result.errors + result.timeouts,
  };
}

export const throughput: Scenario = {
  name: "throughput",
  title: "HTTP throughput",
  async run(options) {
    const reps = repetitions(options, 3);
    const seconds = options.quick ? 2 : 4;
    const server = await startRunledger({ modelUrl: options.modelUrl, cpuProfile: options.cpuProfile ? "throughput-runledger" : undefined });
    const floorServer = await startFloorProcess(options.modelUrl);
    const ours = new Map<string, Load[]>(QUERIES.map((q) => [q.name, []]));
    const floor = new Map<string, Load[]>(QUERIES.map((q) => [q.name, []]));
    const yoga: Load[] = [];
    try {
      await seedConversations(server.url);
      for (const q of QUERIES) {
        const body = JSON.stringify({ query: q.query });
        const answer = await fetch(`${server.url}/graphql`, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/graphql-response+json" },
          body,
        });
        const bytes = Buffer.from(await answer.arrayBuffer());
        if (!answer.ok || (JSON.parse(bytes.toString()) as { errors?: unknown }).errors) throw new Error(`${q.name} failed: ${bytes}`);
        await fetch(`${floorServer.url}/canned`, { method: "PUT", body: bytes }).then((r) => r.arrayBuffer());
        const withYoga = q.name === "{ __typename }";
        await load(server, `${server.url}/graphql`, body, 1); // warm-up
        if (withYoga) await load(floorServer, `${floorServer.url}/yoga`, body, 1);
        for (let rep = 0; rep < reps; rep++) {
          const a = await load(server, `${server.url}/graphql`, body, seconds);
          const b = await load(floorServer, `${floorServer.url}/graphql`, body, seconds);
          const c = withYoga ? await load(floorServer, `${floorServer.url}/yoga`, body, seconds) : null;
          ours.get(q.name)!.push(a);
          floor.get(q.name)!.push(b);
          if (c) yoga.push(c);
          options.log(
            `  rep ${rep + 1}/${reps} ${q.name}: runledger ${Math.round(a.rps)} req/s, ${a.cpuPerRequest.toFixed(3)} ms CPU/request (${a.failures} failed); node:http ${Math.round(b.rps)} req/s, ${b.cpuPerRequest.toFixed(3)} ms${c ? `; graphql-yoga ${Math.round(c.rps)} req/s, ${c.cpuPerRequest.toFixed(3)} ms` : ""}`,
          );
        }
      }
      // The data behind the page must be what was measured.
      const { conversations } = await gqlOk(server.url, "{ conversations(first: 1) { totalCount } }");
      if (conversations.totalCount < SEEDED_CONVERSATIONS) throw new Error(`expected ${SEEDED_CONVERSATIONS} conversations, found ${conversations.totalCount}`);
    } finally {
      await server.stop();
      await floorServer.stop();
    }
    const rows: Row[] = [];
    for (const q of QUERIES) {
      const runs = ours.get(q.name)!;
      const failures = runs.reduce((n, r) => n + r.failures, 0);
      const rps = scalar(
        "req/s",
        runs.map((r) => r.rps),
        true,
      );
      rows.push({
        scenario: "throughput",
        case: q.name,
        metric: `requests/s, ${CONNECTIONS} connections`,
        runledger: rps,
        baseline: {
          label: "plain node:http, same bytes",
          measure: scalar(
            "req/s",
            floor.get(q.name)!.map((r) => r.rps),
            true,
          ),
        },
        target: { text: `≥ ${q.target.toLocaleString("en-US")} req/s`, met: rps.kind === "scalar" && rps.median >= q.target && failures === 0 },
        notes: failures ? [`${failures} failed requests (non-2xx, errors, timeouts)`] : undefined,
      });
      if (q.name === "{ __typename }") {
        rows.push({
          scenario: "throughput",
          case: q.name,
          metric: `requests/s, ${CONNECTIONS} connections`,
          runledger: rps,
          baseline: {
            label: "graphql-yoga alone, one-field schema",
            measure: scalar(
              "req/s",
              yoga.map((r) => r.rps),
              true,
            ),
          },
        });
      }
      rows.push({
        scenario: "throughput",
        case: q.name,
        metric: "request latency (p50 / p97.5 / p99)",
        runledger: dist(
          "ms",
          runs.map((r) => r.latency),
        ),
        baseline: {
          label: "plain node:http, same bytes",
          measure: dist(
            "ms",
            floor.get(q.name)!.map((r) => r.latency),
          ),
        },
      });
      rows.push({
        scenario: "throughput",
        case: q.name,
        metric: "server CPU per request",
        runledger: scalar(
          "ms",
          runs.map((r) => r.cpuPerRequest),
        ),
        baseline:
          q.name === "{ __typename }"
            ? {
                label: "graphql-yoga alone, one-field schema",
                measure: scalar(
                  "ms",
                  yoga.map((r) => r.cpuPerRequest),
                ),
              }
            : {
                label: "plain node:http, same bytes",
                measure: scalar(
                  "ms",
                  floor.get(q.name)!.map((r) => r.cpuPerRequest),
                ),
              },
      });
    }
    return {
      rows,
      notes: [
        `autocannon in the harness process, ${CONNECTIONS} connections, ${seconds} s per repetition, ${reps} repetitions; ${SEEDED_CONVERSATIONS} conversations made by real runs`,
      ],
    };
  },
};
