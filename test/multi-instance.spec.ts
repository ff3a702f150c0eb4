// Several instances behind a load balancer: real server processes on one
// PostgreSQL database and one Redis. A run started on one instance streams to
// subscribers on another with the same seqs; starts race across instances with
// exactly one winner; a cancel sent anywhere stops the run where it executes;
// an instance killed mid-stream has its run recorded INTERRUPTED by another
// once its lease lapses, its subscribers told, and the run resumable anywhere;
// a graceful stop of one instance loses nothing on the others; ENQUEUE and
// ROLLBACK work across instances; instances that
// start together on an empty database migrate it once. After each scenario no
// run is left `running`.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { defaultResponder, startFakeOllama, type FakeOllama, type FakeStep } from "../testkit/fake-ollama.ts";
import { PROCESS_TEST_TIMEOUT_MS, trackedServerProcesses, waitForRun } from "../testkit/app.ts";
import { collect, gql, gqlOk, startRun, sseClient, wsClient } from "../testkit/graphql.ts";
import { CANCEL_RUN, CONVERSATION, RESUME_RUN, RUN, RUN_EVENTS, START_RUN } from "../testkit/documents.ts";
import { until } from "../testkit/streaming.ts";
import { postgresDatabase, redisServer, SERVICES_TIMEOUT_MS, uniqueName } from "../testkit/services.ts";
import type { ServerProcess } from "../testkit/processes.ts";

const startServer = trackedServerProcesses();
/** Fast heartbeats and a short lease, so a dead instance is found within seconds. */
const OWNERSHIP = { RUN_HEARTBEAT_MS: "200", RUN_LEASE_MS: "2500" };

let fake: FakeOllama;
let database: { url: string; drop(): Promise<void> };
let env: Record<string, string>;
let a: ServerProcess;
let b: ServerProcess;
let c: ServerProcess;

/** An answer the fake model holds until released, streaming slowly after that. */
function held(tokens = ["Held ", "answer."]): { step: Promise<FakeStep>; release: () => void } {
  let release = () => {};
  const step = new Promise<FakeStep>((resolve) => {
    release = () => resolve({ kind: "text", tokens });
  });
  return { step, release };
}

beforeAll(async () => {
  fake = await startFakeOllama();
  const [db, redis] = await Promise.all([postgresDatabase(), redisServer()]);
  database = db;
  env = { DATABASE_URL: db.url, REDIS_URL: redis.url, REDIS_KEY_PREFIX: `${uniqueName("instances")}:`, OLLAMA_HOST: fake.url, ...OWNERSHIP };
  // Three instances starting at once on an empty database: the advisory lock lets one migrate.
  [a, b, c] = await Promise.all([startServer(env), startServer(env), startServer(env)]);
}, SERVICES_TIMEOUT_MS);
afterAll(async () => {
  for (const server of [a, b, c]) await server?.stop("SIGKILL");
  await database?.drop();
  await fake?.close();
});

describe("three instances on one PostgreSQL and one Redis", () => {
  // Whatever a scenario did to the instances (cancels, kills, stops), every run it started ends recorded.
  afterEach(async () => {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ id: string; owner_id: string | null }>(`SELECT id, owner_id FROM runs WHERE status IN ('running', 'queued')`);
      expect(rows, "runs left running or queued").toEqual([]);
    } finally {
      await client.end();
    }
  });

  it("started together on an empty database, migrated it exactly once", async () => {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ migration_name: string; n: number }>(
        `SELECT migration_name, count(*)::int AS n FROM "_prisma_migrations" GROUP BY migration_name ORDER BY 1`,
      );
      expect(rows.length).toBeGreaterThanOrEqual(2);
      for (const row of rows) expect(row.n).toBe(1);
      for (const server of [a, b, c]) expect(server.output()).not.toMatch(/"level":"error"/);
    } finally {
      await client.end();
    }
  });

  it("streams a run started on A to subscribers on B and C, with the same seqs, over both transports", async () => {
    const answer = held(["one ", "two ", "three."]);
    fake.setResponder(() => answer.step);
    try {
      const { runId, conversationId } = await startRun(a.url, "Stream me across instances.");
      const streams = [
        collect(wsClient(a.url), RUN_EVENTS, { runId }),
        collect(wsClient(b.url), RUN_EVENTS, { runId }),
        collect(sseClient(c.url), RUN_EVENTS, { runId }),
      ];
      await until(() => streams.every((s) => s.results.length > 0), "every subscriber's first event");
      answer.release();
      const [onA, onB, onC] = (await Promise.all(streams.map((s) => s.done))).map((results) => results.map((r) => r.runEvents)) as [any[], any[], any[]];
      expect(onB).toEqual(onA);
      expect(onC).toEqual(onA);
      expect(onA.map((e) => e.seq)).toEqual(onA.map((_, i) => i + 1));
      expect(
        onA
          .filter((e) => e.__typename === "TokenEvent")
          .map((e) => e.text)
          .join(""),
      ).toBe("one two three.");
      expect(onA.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "COMPLETED" });
      // A late subscriber on another instance replays it all.
      expect((await collect(wsClient(c.url), RUN_EVENTS, { runId }).done).map((r) => r.runEvents)).toEqual(onA);
      expect((await gqlOk(b.url, CONVERSATION, { id: conversationId })).conversation.messages.at(-1).content).toBe("one two three.");
    } finally {
      fake.setResponder(defaultResponder);
    }
  });

  it(
    "lets exactly one of starts racing on three instances win, 50 times",
    async () => {
      const conversations: string[] = [];
      for (let i = 0; i < 50; i++) {
        const { runId, conversationId } = await startRun([a, b, c][i % 3]!.url, `race ${i}`);
        conversations.push(conversationId);
        await waitForRun(a.url, runId);
      }
      const answer = held();
      fake.setResponder(() => answer.step);
      try {
        const results = await Promise.all(
          conversations.flatMap((conversationId, i) => [a, b, c].map((server) => gql(server.url, START_RUN, { conversationId, message: `attempt ${i}` }))),
        );
        for (const result of results) expect(result.errors).toBeUndefined();
        for (let i = 0; i < 50; i++) {
          const kinds = results
            .slice(i * 3, i * 3 + 3)
            .map((r) => r.data.startRun.__typename)
            .sort();
          expect(kinds, `conversation ${i}`).toEqual(["RunInProgressError", "RunInProgressError", "StartRunSuccess"]);
        }
        answer.release();
        const winners = results.map((r) => r.data.startRun).filter((r) => r.__typename === "StartRunSuccess");
        for (const winner of winners) expect(await waitForRun(b.url, winner.run.id)).toMatchObject({ status: "COMPLETED" });
      } finally {
        // Whatever failed, no run stays held for the scenarios after this one.
        answer.release();
        fake.setResponder(defaultResponder);
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it("stops a run executing on A within a second when B is asked to cancel it", async () => {
    fake.enqueue({ kind: "silence", tokens: ["Working "] });
    const { runId } = await startRun(a.url, "Cancel me from elsewhere.");
    await until(() => fake.openChatRequests() === 1, "the model request from A");
    const stream = collect(wsClient(c.url), RUN_EVENTS, { runId });
    await until(() => stream.results.length > 0, "the subscriber on C");
    const asked = Date.now();
    const { cancelRun } = await gqlOk(b.url, CANCEL_RUN, { runId });
    expect(cancelRun).toMatchObject({ __typename: "CancelRunSuccess", run: { status: "CANCELLED" } });
    await until(() => fake.openChatRequests() === 0, "A to close the model request", 5_000);
    expect(Date.now() - asked).toBeLessThan(1_000);
    const events = (await stream.done).map((r) => r.runEvents);
    expect(events.at(-1)).toMatchObject({ status: "CANCELLED", errorCode: "CANCELLED" });
    const run = (await gqlOk(a.url, RUN, { id: runId })).run;
    expect(run).toMatchObject({ status: "CANCELLED", partialOutput: "Working " });
  });

  it(
    "records a run of a killed instance INTERRUPTED from another, tells its subscribers, and resumes it anywhere",
    async () => {
      const victim = await startServer(env);
      fake.enqueue({ kind: "silence", tokens: ["Half an "] });
      const { runId, conversationId } = await startRun(victim.url, "Kill the one that runs me.");
      await until(() => fake.openChatRequests() === 1, "the model request from the victim");
      const stream = collect(wsClient(b.url), RUN_EVENTS, { runId });
      await until(() => stream.results.some((r) => r.runEvents.__typename === "TokenEvent"), "the token on B");
      await victim.stop("SIGKILL");
      const events = (await stream.done).map((r) => r.runEvents);
      expect(events.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "INTERRUPTED", errorCode: "INTERRUPTED" });
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      const run = (await gqlOk(c.url, RUN, { id: runId })).run;
      expect(run).toMatchObject({ status: "INTERRUPTED", errorCode: "INTERRUPTED" });
      // A subscriber arriving later gets the same terminal event, from storage.
      expect((await collect(wsClient(a.url), RUN_EVENTS, { runId, after: events.at(-2).seq }).done).map((r) => r.runEvents)).toEqual([events.at(-1)]);
      const { conversation } = await gqlOk(c.url, CONVERSATION, { id: conversationId });
      expect(conversation).toMatchObject({ resumable: true, activeRun: null });
      const { resumeRun } = await gqlOk(c.url, RESUME_RUN, { conversationId });
      expect(await waitForRun(a.url, resumeRun.run.id)).toMatchObject({ status: "COMPLETED" });
      expect((await gqlOk(b.url, CONVERSATION, { id: conversationId })).conversation.messages.at(-1).content).toBe("Echo: Kill the one that runs me.");
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "admits queued runs on whichever instance has room, each exactly once, and loses none when one holding queued and running runs is killed",
    async () => {
      // Two more instances whose agent has a queue of its own (two runs at once, on both together); a, b and c do not serve it.
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-queue-"));
      const agents = path.join(dir, "agents.json");
      fs.writeFileSync(agents, JSON.stringify({ agents: { default: { type: "chat", concurrency: 2 } } }));
      const queueEnv = { ...env, RUNLEDGER_CONFIG: agents };
      const [x, y] = await Promise.all([startServer(queueEnv), startServer(queueEnv)]);
      let executing = 0;
      let peak = 0;
      fake.setResponder(async () => {
        executing += 1;
        peak = Math.max(peak, executing);
        await new Promise((resolve) => setTimeout(resolve, 150));
        executing -= 1;
        return { kind: "text", tokens: ["Done ", "once."], delayMs: 30 };
      });
      const asked = () => fake.requests.map((r) => r.messages.findLast((m) => m.role === "user")?.content);
      try {
        const burst = await Promise.all(Array.from({ length: 8 }, (_, i) => startRun(i % 2 ? y.url : x.url, `queued ${i}`)));
        for (const { runId } of burst) expect(await waitForRun(x.url, runId, 60_000)).toMatchObject({ status: "COMPLETED" });
        expect(peak).toBeLessThanOrEqual(2);
        for (let i = 0; i < 8; i++)
          expect(
            asked().filter((m) => m === `queued ${i}`),
            `queued ${i}`,
          ).toHaveLength(1);

        // x takes six runs: two execute (on x or y), four wait; then x is killed.
        const onX = await Promise.all(Array.from({ length: 6 }, (_, i) => startRun(x.url, `survivor ${i}`)));
        await until(
          async () => (await Promise.all(onX.map(({ runId }) => gqlOk(y.url, RUN, { id: runId })))).some((r) => r.run.status === "RUNNING"),
          "a run executing",
        );
        await x.stop("SIGKILL");
        const ended = await Promise.all(onX.map(({ runId }) => waitForRun(y.url, runId, 60_000)));
        // What executed on x is INTERRUPTED (resumable); everything else completes on y; nothing runs twice.
        expect(ended.every((r) => r.status === "COMPLETED" || r.status === "INTERRUPTED")).toBe(true);
        expect(ended.filter((r) => r.status === "COMPLETED").length).toBeGreaterThanOrEqual(4);
        for (let i = 0; i < 6; i++) expect(asked().filter((m) => m === `survivor ${i}`).length, `survivor ${i}`).toBeLessThanOrEqual(1);
      } finally {
        fake.setResponder(defaultResponder);
        await y.stop("SIGKILL");
        await x.stop("SIGKILL");
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "multitask across instances: ENQUEUE on B waits behind A's run, ROLLBACK on C cancels it where it executes and drops its checkpoints",
    async () => {
      const MULTITASK_START = `mutation($c: ID!, $m: String!, $t: Multitask) {
        startRun(input: { conversationId: $c, message: $m, multitask: $t }) { __typename ... on StartRunSuccess { run { id status queueReason } } }
      }`;
      const first = await startRun(a.url, "First turn.");
      await waitForRun(a.url, first.runId);
      fake.enqueue({ kind: "silence", tokens: ["Half "] });
      const busy = await startRun(a.url, "A long question.", first.conversationId);
      await until(async () => (await gqlOk(b.url, RUN, { id: busy.runId })).run.status === "RUNNING", "the busy run executing");
      // Its model request has taken the silence: cancelled before, it would leave the silence to the run that replaces it.
      await until(() => fake.asked("A long question.") > 0, "the busy run's model request");
      // Sent to B, the message waits behind the run A executes.
      const queued = (await gqlOk(b.url, MULTITASK_START, { c: first.conversationId, m: "Later.", t: "ENQUEUE" })).startRun;
      expect(queued.run).toMatchObject({ status: "QUEUED", queueReason: "BEHIND_ACTIVE_RUN" });
      // ROLLBACK on C: the line is cleared, A's run cancelled where it runs, its checkpoints dropped, the new run starts where it did.
      const rolled = (await gqlOk(c.url, MULTITASK_START, { c: first.conversationId, m: "Start over.", t: "ROLLBACK" })).startRun;
      expect(rolled.__typename).toBe("StartRunSuccess");
      expect(await waitForRun(c.url, rolled.run.id)).toMatchObject({ status: "COMPLETED" });
      expect((await gqlOk(c.url, RUN, { id: busy.runId })).run).toMatchObject({ status: "CANCELLED" });
      expect((await gqlOk(c.url, RUN, { id: queued.run.id })).run).toMatchObject({ status: "CANCELLED" });
      const { conversation } = await gqlOk(b.url, CONVERSATION, { id: first.conversationId });
      expect(conversation.messages.map((m: { content: string }) => m.content)).toEqual([
        "First turn.",
        "Echo: First turn.",
        "Start over.",
        "Echo: Start over.",
      ]);
      const checkpoints = await gqlOk(a.url, `query($id: ID!) { run(id: $id) { checkpoints { id } } }`, { id: busy.runId });
      expect(checkpoints.run.checkpoints).toEqual([]);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "stops one instance gracefully without losing anything on the others",
    async () => {
      const leaving = await startServer(env);
      const answer = held(["kept ", "going."]);
      fake.setResponder(() => answer.step);
      try {
        const onA = await startRun(a.url, "A keeps going.");
        const onLeaving = await startRun(leaving.url, "This one stops with its instance.");
        const stream = collect(wsClient(b.url), RUN_EVENTS, { runId: onA.runId });
        await until(() => stream.results.length > 0, "the subscriber on B");
        expect(await leaving.stop("SIGTERM")).toBe(0);
        expect((await gqlOk(a.url, RUN, { id: onLeaving.runId })).run).toMatchObject({ status: "INTERRUPTED" });
        answer.release();
        expect((await stream.done).at(-1).runEvents).toMatchObject({ status: "COMPLETED" });
        expect((await gqlOk(c.url, RUN, { id: onA.runId })).run.status).toBe("COMPLETED");
      } finally {
        fake.setResponder(defaultResponder);
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
