// Runs wait their turn, visibly. Behind a model that serves two chats at once
// (the fake keeps its own queue, as Ollama does, and sends a queued chat
// nothing), a burst of runs waits QUEUED in runledger instead of inside the
// model, where the wait would count as model silence: every run completes. A
// model answering 503 (its queue full) makes a run wait and send again, never
// fail. Starters take turns; a queued run can be cancelled at once; an
// instance's own limit queues runs too; and queued runs outlive a restart.
import { afterEach, describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { splitTokens, startFakeOllama, type FakeOllama, type FakeOllamaOptions } from "../testkit/fake-ollama.ts";
import { startTestApp, tempDatabaseUrl } from "../testkit/app.ts";
import { collect, gql, wsClient } from "../testkit/graphql.ts";
import { RUN_EVENTS } from "../testkit/documents.ts";
import { until } from "../testkit/streaming.ts";
import { createApiKey } from "../src/server/identity/api-keys.ts";
import type { App } from "../src/app.ts";

const TOKEN = "admission-admin-token";
const ADMIN = { authorization: `Bearer ${TOKEN}` };
const START = /* GraphQL */ `
  mutation ($message: String!) {
    startRun(input: { message: $message }) {
      __typename
      ... on StartRunSuccess { run { id status queuedAt queueReason queuePosition } conversation { id } }
    }
  }
`;
const RUN = /* GraphQL */ `query ($id: ID!) { run(id: $id) { id status errorCode queueReason queuePosition queuedAt conversation { id } } }`;

let fake: FakeOllama | undefined;
let apps: App[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await fake?.close();
  fake = undefined;
});

/** A fake model whose every answer is `tokens` tokens, `delayMs` apart. */
async function model(options: FakeOllamaOptions & { tokens: number; delayMs: number }): Promise<FakeOllama> {
  const text = Array.from({ length: options.tokens }, (_, i) => `t${i} `).join("");
  fake = await startFakeOllama({ ...options, responder: () => ({ kind: "text", tokens: splitTokens(text), delayMs: options.delayMs }) });
  return fake;
}

async function app(env: Record<string, string>, databaseUrl?: string): Promise<App> {
  const started = await startTestApp({ ollamaUrl: fake!.url, databaseUrl, env: { API_TOKEN: TOKEN, ...env } });
  apps.push(started);
  return started;
}

async function start(on: App, message: string, headers: Record<string, string> = ADMIN) {
  const result = await gql(on.url, START, { message }, headers);
  expect(result.data?.startRun?.__typename, JSON.stringify(result)).toBe("StartRunSuccess");
  return result.data.startRun as {
    run: { id: string; status: string; queueReason: string | null; queuePosition: number | null };
    conversation: { id: string };
  };
}

const run = (on: App, id: string) => gql(on.url, RUN, { id }, ADMIN).then((r) => r.data.run);

async function allEnded(on: App, ids: string[], timeoutMs = 60_000): Promise<any[]> {
  let runs: any[] = [];
  await until(
    async () => {
      runs = await Promise.all(ids.map((id) => run(on, id)));
      return runs.every((r) => r.status !== "QUEUED" && r.status !== "RUNNING");
    },
    "every run to end",
    timeoutMs,
  );
  return runs;
}

describe("a burst behind a model that serves two chats at once", () => {
  it("waits QUEUED (MODEL_BUSY, in order) instead of inside the model, and every run completes within a 3 s idle timeout", async () => {
    await model({ parallel: 2, tokens: 40, delayMs: 20 });
    const on = await app({ MODEL_CONCURRENCY: "2", MODEL_IDLE_TIMEOUT_MS: "3000" });
    const started = await Promise.all(Array.from({ length: 8 }, (_, i) => start(on, `burst ${i}`)));
    expect(started.filter((s) => s.run.status === "RUNNING").length).toBeLessThanOrEqual(2);
    // The ones still waiting, read together: each says why, and their places are 1, 2, 3, ... in queue order.
    const waiting = (await Promise.all(started.map((s) => run(on, s.run.id)))).filter((r) => r.status === "QUEUED");
    expect(waiting.length).toBeGreaterThanOrEqual(4);
    expect(waiting.every((r) => r.queueReason === "MODEL_BUSY" && r.queuedAt !== null)).toBe(true);
    const byPlace = [...waiting].sort((a, b) => a.queuePosition - b.queuePosition);
    expect(byPlace.map((r) => r.queuePosition)).toEqual(byPlace.map((_, i) => i + 1));
    expect(byPlace.map((r) => r.queuedAt)).toEqual([...byPlace.map((r) => r.queuedAt)].sort());

    const ended = await allEnded(
      on,
      started.map((s) => s.run.id),
    );
    expect(ended.map((r) => [r.status, r.errorCode, r.queuePosition, r.queueReason])).toEqual(ended.map(() => ["COMPLETED", null, null, null]));
    // The model never held a chat in its own queue: runledger did the waiting.
    expect(fake!.capacity()).toMatchObject({ peakServing: 2, queued: 0 });
  });

  it("puts a run whose chat the model turns away (503 'server busy') back in the queue, its slot free, until it is taken: no run fails", async () => {
    await model({ parallel: 2, maxQueue: 0, tokens: 20, delayMs: 20 });
    // Configured beyond what the model serves: the model turns the extra chats away.
    const on = await app({ MODEL_CONCURRENCY: "6", MODEL_IDLE_TIMEOUT_MS: "3000" });
    const ws = wsClient(on.url, { token: TOKEN });
    try {
      const started = await Promise.all(Array.from({ length: 6 }, (_, i) => start(on, `busy ${i}`)));
      // From the first event (after: 0 replays what was sent before the subscription).
      const streams = started.map((s) => collect(ws, RUN_EVENTS, { runId: s.run.id, after: 0 }));
      const seen = (await Promise.all(streams.map((s) => s.done))).map((events) =>
        events
          .map((e: any) => e.runEvents)
          .filter((e: any) => e.__typename === "RunStatusEvent")
          .map((e: any) => e.status),
      );
      const ended = await allEnded(
        on,
        started.map((s) => s.run.id),
      );
      expect(ended.map((r) => [r.status, r.errorCode, r.queueReason])).toEqual(ended.map(() => ["COMPLETED", null, null]));
      expect(fake!.capacity().busy).toBeGreaterThan(0);
      // Every run turned away was told so: back to QUEUED, then RUNNING once admitted again, as many times as it took.
      const turnedAway = seen.filter((statuses) => statuses.includes("QUEUED"));
      expect(turnedAway.length).toBeGreaterThan(0);
      for (const statuses of seen) {
        expect(statuses[0]).toBe("RUNNING");
        expect(statuses.at(-1)).toBe("COMPLETED");
        const between = statuses.slice(1, -1);
        expect(between).toEqual(between.map((_, i) => (i % 2 === 0 ? "QUEUED" : "RUNNING")));
      }
      expect(turnedAway.flat().filter((s) => s === "QUEUED").length).toBeLessThanOrEqual(fake!.capacity().busy);
    } finally {
      await ws.dispose();
    }
  });

  it("shows a turned-away run QUEUED with MODEL_BUSY and its place, frees its slot for the run behind it, and cancels it at once", async () => {
    // One slot at the model, none waiting; runledger believes in two.
    await model({ parallel: 1, maxQueue: 0, tokens: 150, delayMs: 20 });
    const on = await app({ MODEL_CONCURRENCY: "2", MODEL_IDLE_TIMEOUT_MS: "3000" });
    const first = await start(on, "first");
    await until(async () => fake!.capacity().peakServing === 1, "the first chat to be served");
    const second = await start(on, "second");
    // The model turns the second away: it waits in runledger's queue, not as a running run.
    await until(async () => (await run(on, second.run.id)).status === "QUEUED", "the turned-away run to be queued again");
    const queued = await run(on, second.run.id);
    expect(queued).toMatchObject({ status: "QUEUED", queueReason: "MODEL_BUSY", queuePosition: 1, errorCode: null });
    expect(queued.queuedAt).not.toBeNull();
    // Counted as queued here, no longer as executing (read while it waits, between two tries).
    await until(async () => {
      const metrics = await (await fetch(`${on.url}/metrics`, { headers: ADMIN })).text();
      return /^runledger_runs_active 1$/m.test(metrics) && /^runledger_runs_queued 1$/m.test(metrics);
    }, "the metrics to count the turned-away run as queued, not executing");
    // Its slot is free: a third run is admitted to the endpoint meanwhile (and turned away in its turn).
    const asked = (text: string) => fake!.asked(text);
    const third = await start(on, "third");
    await until(async () => asked("third") > 0, "the third run to reach the model");
    // Cancelled while queued again, it ends at once, and its chat is never sent again.
    await until(async () => (await run(on, second.run.id)).status === "QUEUED", "the second run to be queued again");
    const cancelled = await gql(
      on.url,
      `mutation ($id: ID!) { cancelRun(input: { runId: $id }) { __typename ... on CancelRunSuccess { run { id status errorCode queueReason } } } }`,
      { id: second.run.id },
      ADMIN,
    );
    expect(cancelled.data.cancelRun).toMatchObject({ __typename: "CancelRunSuccess", run: { status: "CANCELLED", errorCode: "CANCELLED", queueReason: null } });
    const sent = asked("second");
    const ended = await allEnded(on, [first.run.id, third.run.id]);
    expect(ended.map((r) => r.status)).toEqual(["COMPLETED", "COMPLETED"]);
    expect(asked("second")).toBe(sent);
  });
  it("keeps a turned-away run RUNNING, waiting its backoff in place, when the database refuses to queue it again: it still completes", async () => {
    await model({ parallel: 1, maxQueue: 0, tokens: 40, delayMs: 20 });
    const database = tempDatabaseUrl("runledger-admission-refused-");
    const on = await app({ MODEL_CONCURRENCY: "2", MODEL_IDLE_TIMEOUT_MS: "3000" }, database.url);
    // The database itself refuses the move back to the queue (a trigger), as a full disk or a lost lock would.
    const db = new Database(database.file);
    db.exec(
      `CREATE TRIGGER refuse_requeue BEFORE UPDATE OF status ON runs WHEN NEW.queue_reason = 'MODEL_BUSY' BEGIN SELECT RAISE(ABORT, 'requeue refused'); END`,
    );
    db.close();
    const ws = wsClient(on.url, { token: TOKEN });
    try {
      const first = await start(on, "first");
      await until(async () => fake!.capacity().peakServing === 1, "the first chat to be served");
      const second = await start(on, "second");
      const stream = collect(ws, RUN_EVENTS, { runId: second.run.id, after: 0 });
      await until(async () => fake!.capacity().busy > 0, "the model to turn the second chat away");
      expect((await run(on, second.run.id)).status).toBe("RUNNING");
      const ended = await allEnded(on, [first.run.id, second.run.id]);
      expect(ended.map((r) => [r.status, r.errorCode])).toEqual([
        ["COMPLETED", null],
        ["COMPLETED", null],
      ]);
      // Never queued again: it waited where it was, and sent its chat again after the backoff.
      const statuses = (await stream.done).map((e: any) => e.runEvents).filter((e: any) => e.__typename === "RunStatusEvent");
      expect(statuses.map((e: any) => e.status)).toEqual(["RUNNING", "COMPLETED"]);
      expect(fake!.asked("second")).toBeGreaterThan(1);
    } finally {
      await ws.dispose();
    }
  });
});

describe("turns, cancels and limits", () => {
  it("gives the next slot to a starter who has not been served over one with a burst, oldest first otherwise", async () => {
    await model({ tokens: 10, delayMs: 30 });
    const on = await app({ MODEL_CONCURRENCY: "1" });
    const alice = { authorization: `Bearer ${(await createApiKey(on.storage.apiKeys, { userId: "alice", role: "user", label: null })).key}` };
    const bob = { authorization: `Bearer ${(await createApiKey(on.storage.apiKeys, { userId: "bob", role: "user", label: null })).key}` };
    const first = await start(on, "alice 1", alice);
    const more = [await start(on, "alice 2", alice), await start(on, "alice 3", alice)];
    const bobs = await start(on, "bob 1", bob);
    expect(bobs.run.status).toBe("QUEUED");
    await allEnded(on, [first.run.id, ...more.map((s) => s.run.id), bobs.run.id]);
    // The model's requests in order, by the message they carry.
    const order = fake!.requests.map((r) => r.messages.findLast((m) => m.role === "user")?.content);
    expect(order).toEqual(["alice 1", "bob 1", "alice 2", "alice 3"]);
  });

  it("cancels a queued run at once: CANCELLED, it never reaches the model, and the queue moves on", async () => {
    await model({ tokens: 20, delayMs: 20 });
    const on = await app({ MODEL_CONCURRENCY: "1" });
    const head = await start(on, "first in line");
    const middle = await start(on, "cancelled while queued");
    const last = await start(on, "last in line");
    expect([head.run.status, middle.run.status, last.run.status]).toEqual(["RUNNING", "QUEUED", "QUEUED"]);
    expect((await run(on, last.run.id)).queuePosition).toBe(2);
    const cancelled = await gql(
      on.url,
      `mutation ($id: ID!) { cancelRun(input: { runId: $id }) { __typename ... on CancelRunSuccess { run { status errorCode } } } }`,
      { id: middle.run.id },
      ADMIN,
    );
    expect(cancelled.data.cancelRun).toEqual({ __typename: "CancelRunSuccess", run: { status: "CANCELLED", errorCode: "CANCELLED" } });
    expect((await run(on, last.run.id)).queuePosition).toBe(1);
    const ended = await allEnded(on, [head.run.id, last.run.id]);
    expect(ended.map((r) => r.status)).toEqual(["COMPLETED", "COMPLETED"]);
    expect(fake!.requests.map((r) => r.messages.findLast((m) => m.role === "user")?.content)).toEqual(["first in line", "last in line"]);
  });

  it("queues beyond MAX_ACTIVE_RUNS as INSTANCE_FULL, then runs them as room frees", async () => {
    await model({ tokens: 10, delayMs: 30 });
    const on = await app({ MAX_ACTIVE_RUNS: "1", MODEL_CONCURRENCY: "10" });
    const a = await start(on, "one");
    const b = await start(on, "two");
    expect(a.run.status).toBe("RUNNING");
    expect(b.run).toMatchObject({ status: "QUEUED", queueReason: "INSTANCE_FULL", queuePosition: 1 });
    const ended = await allEnded(on, [a.run.id, b.run.id]);
    expect(ended.map((r) => r.status)).toEqual(["COMPLETED", "COMPLETED"]);
  });

  it("with ADMISSION_LOOP_DELAY_MS, admits fewer runs while the event loop runs late (INSTANCE_FULL beyond), and more again once it keeps up", async () => {
    await model({ tokens: 20, delayMs: 50 });
    const on = await app({ ADMISSION_LOOP_DELAY_MS: "10", MAX_ACTIVE_RUNS: "64", MODEL_CONCURRENCY: "64" });
    const limit = async () => Number((await (await fetch(`${on.url}/metrics`, { headers: ADMIN })).text()).match(/^runledger_admission_limit (\d+)$/m)?.[1]);
    expect(await limit()).toBe(64);
    // This process serves the instance: hold its loop up, 60 ms a turn, for 3 s (twelve windows).
    const until3s = Date.now() + 3_000;
    while (Date.now() < until3s) {
      const end = Date.now() + 60;
      while (Date.now() < end) {
        // busy
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    const lowered = await limit();
    expect(lowered).toBeLessThan(8);
    const started = [];
    for (let i = 0; i < 8; i++) started.push(await start(on, `late loop ${i}`));
    const queued = started.filter((s) => s.run.status === "QUEUED");
    expect(queued.length).toBeGreaterThan(0);
    for (const q of queued) expect(q.run.queueReason).toBe("INSTANCE_FULL");
    const ended = await allEnded(
      on,
      started.map((s) => s.run.id),
    );
    expect(ended.map((r) => r.status)).toEqual(Array(8).fill("COMPLETED"));
    await until(async () => (await limit()) > lowered, "the limit to grow once the loop keeps up", 20_000);
  });

  it("keeps queued runs through a restart: the next start claims and completes them", async () => {
    await model({ tokens: 30, delayMs: 30 });
    const databaseUrl = tempDatabaseUrl("runledger-admission-restart-").url;
    const before = await app({ MODEL_CONCURRENCY: "1", SHUTDOWN_TIMEOUT_MS: "5000" }, databaseUrl);
    const running = await start(before, "running at shutdown");
    const queued = [await start(before, "queued 1"), await start(before, "queued 2")];
    expect(queued.map((q) => q.run.status)).toEqual(["QUEUED", "QUEUED"]);
    await before.close();
    apps = apps.filter((a) => a !== before);
    const after = await app({ MODEL_CONCURRENCY: "1" }, databaseUrl);
    expect((await run(after, running.run.id)).status).toBe("INTERRUPTED");
    const ended = await allEnded(
      after,
      queued.map((q) => q.run.id),
    );
    expect(ended.map((r) => r.status)).toEqual(["COMPLETED", "COMPLETED"]);
  });
});
