// @runledger/client on two instances sharing PostgreSQL and Redis (both
// started in this process): the client's socket is on instance A (through a
// TCP proxy), the runs are started on instance B with plain GraphQL calls. The
// store follows them through A, rejoins exactly after a dropped socket and
// after its own instance restarts while the other one executes the run, and
// stops a run from A.
import pg from "pg";
import WebSocket from "ws";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { PROCESS_TEST_TIMEOUT_MS, trackedServerProcesses, waitForRun } from "../testkit/app.ts";
import { gqlOk, startRun } from "../testkit/graphql.ts";
import { RUN } from "../testkit/documents.ts";
import { until } from "../testkit/streaming.ts";
import { postgresDatabase, redisServer, SERVICES_TIMEOUT_MS, uniqueName } from "../testkit/services.ts";
import type { ServerProcess } from "../testkit/processes.ts";
import { createWebSocketTransport, memoryStorage, type RunledgerClient } from "../packages/client/src/index.ts";
import { startProxy, type Proxy } from "./sdk/proxy.ts";
import {
  aftersOf,
  ended,
  expectExactly,
  noting,
  numbered,
  observeRun,
  ofRun,
  sdkClient,
  seenEvents,
  serverLog,
  serverThread,
  settled,
  storedMessages,
  textOf,
} from "./sdk/harness.ts";

// Server processes: instances in one process would take each other for a
// previous incarnation of themselves (the same pid) and record each other's runs interrupted.
const startServer = trackedServerProcesses();

let fake: FakeOllama;
let database: { url: string; drop(): Promise<void> };
let env: Record<string, string>;
let a: ServerProcess;
let b: ServerProcess;
let proxy: Proxy;
const clients: RunledgerClient[] = [];

beforeAll(async () => {
  fake = await startFakeOllama();
  const [db, redis] = await Promise.all([postgresDatabase(), redisServer()]);
  database = db;
  env = { DATABASE_URL: db.url, REDIS_URL: redis.url, REDIS_KEY_PREFIX: `${uniqueName("sdk")}:`, OLLAMA_HOST: fake.url };
  [a, b] = await Promise.all([startServer(env), startServer(env)]);
  proxy = await startProxy(Number(new URL(a.url).port));
}, SERVICES_TIMEOUT_MS);

afterAll(async () => {
  await proxy?.close();
  for (const server of [a, b]) await server?.stop("SIGKILL");
  await fake?.close();
  await database?.drop();
});

afterEach(async () => {
  for (const client of clients.splice(0)) await client.dispose();
  proxy.block(false);
});

function notingClient() {
  const transport = noting(createWebSocketTransport({ url: proxy.url, webSocketImpl: WebSocket }));
  const client = sdkClient(proxy.url, { storage: memoryStorage(), transport });
  clients.push(client);
  return { client, transport };
}

/** Live WebSocket subscriptions on an instance (its runledger_subscriptions gauge). */
async function wsSubscriptions(server: ServerProcess): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  return Number(/^runledger_subscriptions\{transport="ws"\} (\S+)$/m.exec(text)?.[1] ?? NaN);
}

/** The pid of the process executing the run, once it runs. */
async function executorPid(runId: string): Promise<number | null> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>(
      "SELECT o.pid FROM runs r JOIN run_owners o ON o.id = r.owner_id WHERE r.id = $1 AND r.status = 'running'",
      [runId],
    );
    return rows[0]?.pid ?? null;
  } finally {
    await client.end();
  }
}

/** A conversation made on B, its first run ended. */
async function conversationOnB(message: string): Promise<string> {
  const opening = await startRun(b.url, message);
  await waitForRun(b.url, opening.runId);
  return opening.conversationId;
}

describe("socket on A, runs started on B (PostgreSQL + Redis)", () => {
  it("follows two runs started on B, and sees each one's log exactly as B sends it", async () => {
    const conversationId = await conversationOnB("Opened on B");
    const { client } = notingClient();
    const store = client.conversation(conversationId);
    const seen = seenEvents(store);
    await settled(store, (s) => s.phase === "ready" && s.messages.length === 2, "the thread read on A");
    await until(async () => (await wsSubscriptions(a)) >= 1, "the store's notices on A");

    fake.enqueue({ kind: "trickle", tokens: numbered(25), delayMs: 15 });
    const one = await startRun(b.url, "First on B", conversationId);
    await settled(store, (s) => s.run?.id === one.runId && s.busy, "the first run followed through A");
    await ended(store, one.runId, "COMPLETED");
    const two = await startRun(b.url, "Second on B", conversationId);
    const done = await ended(store, two.runId, "COMPLETED");

    for (const runId of [one.runId, two.runId]) {
      const fromB = await serverLog(b.url, runId);
      expect(await serverLog(a.url, runId)).toEqual(fromB);
      expectExactly(ofRun(seen, runId), fromB);
    }
    expect(storedMessages(done)).toEqual((await serverThread(b.url, conversationId)).messages);
  });

  it("a dropped socket on A mid-run (the run started on B): it rejoins with after: the last seq, and sees the log exactly once", async () => {
    const conversationId = await conversationOnB("Drop on A");
    const { client, transport } = notingClient();
    const store = client.conversation(conversationId);
    const seen = seenEvents(store);
    await settled(store, (s) => s.phase === "ready", "the thread read on A");
    await until(async () => (await wsSubscriptions(a)) >= 1, "the store's notices on A");

    fake.enqueue({ kind: "trickle", tokens: numbered(60), delayMs: 20 });
    const run = await startRun(b.url, "Stream to A through a drop", conversationId);
    await settled(store, (s) => s.run?.id === run.runId && s.run.lastSeq >= 8, "eight events through A");
    const before = store.getSnapshot().run!.lastSeq;
    proxy.dropAll();
    const done = await ended(store, run.runId, "COMPLETED");

    expectExactly(ofRun(seen, run.runId), await serverLog(b.url, run.runId));
    const afters = aftersOf(transport, run.runId);
    expect(afters.length).toBeGreaterThanOrEqual(2);
    expect(Math.max(...afters)).toBeGreaterThanOrEqual(before);
    expect(done.run!.gaps).toEqual([]);
    expect(storedMessages(done)).toEqual((await serverThread(b.url, conversationId)).messages);
  });

  it(
    "the client's instance restarts mid-run while the other executes the run: it reconnects and rejoins after its last seq, with no gap",
    async () => {
      const conversationId = await conversationOnB("Restart the client's instance");
      fake.enqueue({ kind: "trickle", tokens: numbered(150), delayMs: 20 });
      const run = await startRun(b.url, "Stream through a restart of the client's instance", conversationId);
      // Whichever instance claimed the run executes it; the client goes to the other one.
      const pid = await until(() => executorPid(run.runId), "the run running");
      const executor = pid === a.pid ? a : b;
      const clientSide = executor === a ? b : a;
      expect([a.pid, b.pid]).toContain(pid);
      proxy.retarget(Number(new URL(clientSide.url).port));
      const observer = observeRun(executor.url, run.runId);

      const { client, transport } = notingClient();
      const store = client.conversation(conversationId);
      const seen = seenEvents(store);
      await settled(store, (s) => s.run?.id === run.runId && s.run.lastSeq >= 8, "eight events");
      const before = store.getSnapshot().run!.lastSeq;

      expect(await clientSide.stop("SIGTERM")).toBe(0);
      const restarted = await startServer(env);
      if (clientSide === a) a = restarted;
      else b = restarted;
      proxy.retarget(Number(new URL(restarted.url).port));
      await ended(store, run.runId, "COMPLETED", 40_000);
      const log = await observer.done;
      // A read may tell the outcome first; the store follows the run until its terminal event.
      await until(() => ofRun(seen, run.runId).some((e) => e.seq === log.at(-1)!.seq), "the terminal event through the restarted instance");
      const done = store.getSnapshot();
      expectExactly(ofRun(seen, run.runId), log);
      const afters = aftersOf(transport, run.runId);
      expect(afters.length).toBeGreaterThanOrEqual(2);
      expect(Math.max(...afters)).toBeGreaterThanOrEqual(before);
      expect(done.run!.gaps).toEqual([]);
      expect(storedMessages(done)).toEqual((await serverThread(restarted.url, conversationId)).messages);
      expect(client.connection.getSnapshot().reconnects).toBeGreaterThanOrEqual(1);
      proxy.retarget(Number(new URL(a.url).port));
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it("stop() through A cancels a run started on B", async () => {
    const conversationId = await conversationOnB("Stop across");
    const { client } = notingClient();
    const store = client.conversation(conversationId);
    await settled(store, (s) => s.phase === "ready", "the thread read on A");
    await until(async () => (await wsSubscriptions(a)) >= 1, "the store's notices on A");
    fake.enqueue({ kind: "trickle", tokens: numbered(300), delayMs: 20 });
    const run = await startRun(b.url, "Stop me from A", conversationId);
    const seen = seenEvents(store);
    const observer = observeRun(b.url, run.runId);
    await settled(store, (s) => s.run?.id === run.runId && s.run.lastSeq >= 4, "streaming through A");
    expect((await store.stop()).ok).toBe(true);
    // The cancel's answer ends the run at once; what B streamed until it stopped is B's to record, before its terminal event.
    await ended(store, run.runId, "CANCELLED");
    await until(
      () => seen.some((e) => e.runId === run.runId && e.__typename === "RunStatusEvent" && e.status === "CANCELLED"),
      "the terminal event from B, through A",
    );
    const record = (await gqlOk(b.url, RUN, { id: run.runId })).run;
    expect(record).toMatchObject({ status: "CANCELLED", errorCode: "CANCELLED" });
    // Exactly the text of the tokens B published, however many it streamed before the cancel reached it.
    const streamed = textOf(await observer.done);
    expect(streamed).toMatch(/^t1 /);
    expect(streamed.length).toBeLessThan(numbered(300).join("").length);
    expect(record.partialOutput).toBe(streamed);
    // The read that follows the terminal event brings the stored text: the view ends as the record.
    const done = await settled(store, (s) => s.run?.id === run.runId && s.run.partialOutput === record.partialOutput, "the stored partial output on A");
    expect(done.run).toMatchObject({ status: "CANCELLED", errorCode: "CANCELLED" });
  });
});
