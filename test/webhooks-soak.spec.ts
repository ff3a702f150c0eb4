// Webhooks through SIGKILL, for real: the server (a primary and two workers)
// runs as child processes on one SQLite file, runs with a webhook are started,
// and the whole server is killed at a random moment, round after round, while
// runs stream, while deliveries are failing and being retried, and while
// answers are on their way. Then a last start recovers what was cut off. Every
// run that was recorded is told to the receiver with the status the database
// holds, every request's signature checks out, and each delivery's webhook-id
// reaches the receiver: nothing lost, nothing unsigned (docs/webhooks.md).
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { CLUSTER_ENV, PROCESS_TEST_TIMEOUT_MS, tempDatabaseUrl, trackedServerProcesses } from "../testkit/app.ts";
import { gql } from "../testkit/graphql.ts";
import { sleep, until } from "../testkit/streaming.ts";
import { startWebhookReceiver, webhookSecret, type WebhookReceiver } from "../testkit/webhook-receiver.ts";

const TOKEN = "webhooks-soak-token";
const START = `mutation($input: StartRunInput!) { startRun(input: $input) { __typename ... on StartRunSuccess { run { id } } } }`;
const ROUNDS = 4;
const RUNS_PER_ROUND = 6;

let fake: FakeOllama;
let receiver: WebhookReceiver;
const startServer = trackedServerProcesses(CLUSTER_ENV);
const secret = webhookSecret();

beforeAll(async () => {
  fake = await startFakeOllama();
  receiver = await startWebhookReceiver(secret);
});
afterAll(async () => {
  await receiver?.close();
  await fake?.close();
});

describe("webhooks across SIGKILL rounds", () => {
  it(
    "tell every recorded run's end with the status the database holds, each signed, none lost",
    async () => {
      const database = tempDatabaseUrl("runledger-webhooks-soak-");
      const env = {
        DATABASE_URL: database.url,
        OLLAMA_HOST: fake.url,
        API_TOKEN: TOKEN,
        WEBHOOK_SECRET: secret,
        WEBHOOK_ALLOW_PRIVATE: "true",
        WEBHOOK_POLL_MS: "50",
        WEBHOOK_RETRY_MS: "100",
        WEBHOOK_TIMEOUT_MS: "2000",
        RUN_HEARTBEAT_MS: "200",
        RUN_LEASE_MS: "1500",
      };
      let db: Database.Database | undefined;
      try {
        for (let round = 0; round < ROUNDS; round++) {
          const server = await startServer(env);
          db ??= new Database(database.file, { readonly: true });
          // Some rounds the receiver fails first, so retries are pending when the kill comes.
          if (round % 2 === 1) receiver.failNext("/soak", 3, 502);
          // Two short runs, then long ones: the kill comes once a short one ended, while the long ones stream.
          for (let i = 0; i < RUNS_PER_ROUND; i++)
            fake.enqueue({ kind: "text", tokens: Array.from({ length: i < 2 ? 3 : 60 }, (_, k) => `t${k} `), delayMs: 50 });
          const starts = Array.from({ length: RUNS_PER_ROUND }, (_, i) =>
            gql(
              server.url,
              START,
              { input: { message: `round ${round} run ${i}`, webhook: { url: `${receiver.url}/soak` } } },
              { authorization: `Bearer ${TOKEN}` },
            ).catch(() => null),
          );
          // Killed while some runs stream, some have ended and some deliveries are under way.
          const ended = () =>
            db!.prepare(`SELECT count(*) AS n FROM runs WHERE input LIKE ? AND status = 'completed'`).get(`round ${round} %`) as { n: number };
          await until(() => ended().n >= 1, "a run of this round completed", 20_000);
          await sleep(Math.floor(Math.random() * 200));
          server.child.kill("SIGKILL");
          expect(await server.exited).toBeNull();
          await Promise.all(starts);
        }
        const last = await startServer(env);
        const open = (sql: string) => (db!.prepare(sql).get() as { n: number }).n;
        await until(() => open(`SELECT count(*) AS n FROM runs WHERE status IN ('running', 'queued')`) === 0, "every run ended", 30_000);
        await until(() => open(`SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'`) === 0, "every delivery sent", 30_000);
        const runs = db!.prepare(`SELECT id, status FROM runs`).all() as { id: string; status: string }[];
        const deliveries = db!.prepare(`SELECT id, run_id AS runId, status, event FROM webhook_deliveries`).all() as {
          id: string;
          runId: string;
          status: string;
          event: string;
        }[];
        expect(runs.length).toBeGreaterThanOrEqual(ROUNDS);
        // Some runs ended before their kill and some were cut off by it (recovered as interrupted).
        const statuses = runs.map((r) => r.status);
        expect(statuses).toContain("completed");
        expect(statuses).toContain("interrupted");
        expect(deliveries.filter((d) => d.status !== "delivered" || d.event !== "RUN_ENDED")).toEqual([]);
        expect(new Set(deliveries.map((d) => d.runId))).toEqual(new Set(runs.map((r) => r.id)));

        const got = receiver.unique("/soak");
        for (const request of receiver.received) expect(request.verified, request.verifyError ?? "").toBe(true);
        expect(new Set(got.keys())).toEqual(new Set(deliveries.map((d) => d.id)));
        for (const r of runs) {
          const told = [...got.values()].filter((g) => g.body.data.runId === r.id);
          expect(told.length, r.id).toBeGreaterThanOrEqual(1);
          for (const t of told) expect(t.body.data.status, r.id).toBe(r.status.toUpperCase());
        }
        last.child.kill("SIGTERM");
        await last.exited;
      } finally {
        db?.close();
        database.remove();
      }
    },
    PROCESS_TEST_TIMEOUT_MS * 2,
  );
});
