// @runledger/client against a real server (SQLite, started in this process,
// the fake Ollama as its model), reached through a TCP proxy that can drop
// every connection, refuse new ones, or lose one response. Each scenario
// compares what a conversation store shows with the server's own record: the
// run's whole event log (no duplicate, no gap, no stale value) and the
// thread's messages.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import WebSocket from "ws";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp, tempDatabaseUrl, waitForRun } from "../testkit/app.ts";
import { gqlOk, startRun } from "../testkit/graphql.ts";
import { RUN } from "../testkit/documents.ts";
import { until } from "../testkit/streaming.ts";
import {
  createRunledgerClient,
  createWebSocketTransport,
  memoryStorage,
  syncScheduler,
  type ConnectionStatus,
  type RunEvent,
  type RunledgerClient,
} from "../packages/client/src/index.ts";
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

let fake: FakeOllama;
let app: Awaited<ReturnType<typeof startTestApp>>;
let database: ReturnType<typeof tempDatabaseUrl>;
let proxy: Proxy;
let agentsFile: string;
const clients: RunledgerClient[] = [];

function appEnv(): Record<string, string> {
  return { RUNLEDGER_CONFIG: agentsFile };
}

beforeAll(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-sdk-"));
  agentsFile = path.join(dir, "agents.json");
  fs.writeFileSync(
    agentsFile,
    JSON.stringify({
      agents: {
        default: { type: "chat" },
        careful: { type: "chat", description: "Asks before it calculates.", tools: ["calculator"], requireApproval: ["calculator"] },
      },
    }),
  );
  database = tempDatabaseUrl("runledger-sdk-db-");
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url, databaseUrl: database.url, env: appEnv() });
  proxy = await startProxy(Number(new URL(app.url).port));
});

afterAll(async () => {
  await proxy?.close();
  await app?.close();
  await fake?.close();
  if (agentsFile) fs.rmSync(path.dirname(agentsFile), { recursive: true, force: true });
  database?.remove();
});

afterEach(async () => {
  for (const client of clients.splice(0)) await client.dispose();
  proxy.block(false);
});

function client(options: Parameters<typeof sdkClient>[1] = {}): RunledgerClient {
  const made = sdkClient(proxy.url, options);
  clients.push(made);
  return made;
}

/** A client whose transport notes every subscription's variables. */
function notingClient(storage = memoryStorage()) {
  const transport = noting(createWebSocketTransport({ url: proxy.url, webSocketImpl: WebSocket }));
  return { client: client({ storage, transport }), transport };
}

function statuses(made: RunledgerClient): ConnectionStatus[] {
  const seen: ConnectionStatus[] = [made.connection.getSnapshot().status];
  made.connection.subscribe(() => seen.push(made.connection.getSnapshot().status));
  return seen;
}

describe("send and stream", () => {
  it("shows the user's message at once, streams the answer, and ends with the server's events and thread exactly", async () => {
    fake.enqueue(
      { kind: "toolCalls", calls: [{ name: "calculator", args: { expression: "17 * 3" } }] },
      { kind: "trickle", tokens: numbered(12), delayMs: 15 },
    );
    const store = client().conversation();
    const seen = seenEvents(store);
    const states = new Set<string>();
    store.subscribe(() => {
      for (const m of store.getSnapshot().messages) states.add(`${m.role}:${m.state}`);
    });
    const sending = store.submit("Please calculate 17 * 3");
    // Optimistic: shown before the server answers, with a temporary id.
    const first = store.getSnapshot().messages;
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject({ role: "USER", content: "Please calculate 17 * 3", state: "sending" });
    expect(first[0]!.id).toMatch(/^pending:/);
    const started = await sending;
    if (!started.ok) throw new Error(started.error.message);
    const { runId, conversationId } = started.value;

    const done = await ended(store, runId, "COMPLETED");
    expectExactly(ofRun(seen, runId), await serverLog(app.url, runId));
    const thread = await serverThread(app.url, conversationId);
    expect(storedMessages(done)).toEqual(thread.messages);
    expect(done.messages).toHaveLength(thread.messages.length);
    // The user's message now carries the thread's id.
    expect(done.messages[0]).toMatchObject({ role: "USER", state: "stored", id: thread.messages[0]!.id });
    expect(done.messages.at(-1)!.content).toBe(numbered(12).join(""));
    expect(states).toContain("ASSISTANT:streaming");
    expect(done.run).toMatchObject({ id: runId, kind: "START", status: "COMPLETED", input: "Please calculate 17 * 3", gaps: [] });
    expect(done.phase).toBe("ready");
  });
});

describe("exact resume", () => {
  it("(a) a dropped socket mid-run: it rejoins with after: the last seq, and sees the log exactly once", async () => {
    fake.enqueue({ kind: "trickle", tokens: numbered(60), delayMs: 20 });
    const { client: made, transport } = notingClient();
    const connection = statuses(made);
    const store = made.conversation();
    const seen = seenEvents(store);
    const started = await store.submit("Stream through a dropped socket");
    if (!started.ok) throw new Error(started.error.message);
    const { runId, conversationId } = started.value;

    await settled(store, (s) => (s.run?.lastSeq ?? 0) >= 10, "ten events");
    const before = store.getSnapshot().run!.lastSeq;
    proxy.dropAll();
    await until(() => connection.includes("reconnecting"), "the drop noticed");
    await settled(store, (s) => (s.run?.lastSeq ?? 0) >= before + 10, "ten more events after the rejoin");
    proxy.dropAll();

    const done = await ended(store, runId, "COMPLETED");
    expectExactly(ofRun(seen, runId), await serverLog(app.url, runId));
    expect(storedMessages(done)).toEqual((await serverThread(app.url, conversationId)).messages);
    expect(made.connection.getSnapshot()).toMatchObject({ status: "connected" });
    expect(made.connection.getSnapshot().reconnects).toBeGreaterThanOrEqual(2);
    // Each rejoin asked for what came after what it had.
    const afters = aftersOf(transport, runId);
    expect(afters[0]).toBe(0);
    expect(afters.length).toBeGreaterThanOrEqual(3);
    expect(afters[1]).toBeGreaterThanOrEqual(before);
    expect(done.run!.gaps).toEqual([]);
  });

  it("(b) a server restart mid-run, with events streamed while the client was away: the gap is detected and refilled from the stored run; the next run streams live", async () => {
    fake.enqueue({ kind: "trickle", tokens: numbered(400), delayMs: 15 });
    // Told of every change (syncScheduler), so the snapshots below include the one between the gap and its refill.
    const made = createRunledgerClient({
      url: proxy.url,
      transport: createWebSocketTransport({ url: proxy.url, webSocketImpl: WebSocket }),
      schedule: syncScheduler,
    });
    clients.push(made);
    const store = made.conversation();
    const seen = seenEvents(store);
    // Until a gap is refilled, what it may have cut into is marked incomplete, never shown as whole.
    let gapShown = false;
    const papered: string[] = [];
    store.subscribe(() => {
      const shown = store.getSnapshot();
      if (!shown.run?.gaps.some((g) => !g.refilled)) return;
      gapShown = true;
      for (const m of shown.messages) if (m.role === "ASSISTANT" && m.state !== "stored" && !m.incomplete) papered.push(m.content);
    });
    const started = await store.submit("Stream through a restart");
    if (!started.ok) throw new Error(started.error.message);
    const { runId, conversationId } = started.value;
    const observer = observeRun(app.url, runId);

    await settled(store, (s) => (s.run?.lastSeq ?? 0) >= 8, "eight events");
    // The network goes: the client hears nothing more, while the run streams on.
    proxy.block(true);
    proxy.dropAll();
    const away = store.getSnapshot().run!.lastSeq;
    await until(() => observer.events().length >= away + 15, "fifteen events the client does not get");

    // A graceful restart: the run is recorded INTERRUPTED with what it streamed.
    const port = Number(new URL(app.url).port);
    await app.close();
    const log = await observer.done;
    app = await startTestApp({ ollamaUrl: fake.url, databaseUrl: database.url, env: { ...appEnv(), PORT: String(port) } });
    proxy.block(false);

    await ended(store, runId, "INTERRUPTED", 40_000);
    const terminal = log.at(-1)!;
    // A read may tell the outcome first; the store follows the run until its terminal event, then fills the gap.
    await until(() => ofRun(seen, runId).some((e) => e.seq === terminal.seq), "the terminal event applied");
    const done = await settled(store, (s) => s.run?.id === runId && s.run.gaps.length > 0 && s.run.gaps.every((g) => g.refilled), "the gap refilled");
    expect(terminal).toMatchObject({ __typename: "RunStatusEvent", status: "INTERRUPTED" });
    const mine = ofRun(seen, runId);
    // Everything before the drop exactly, then the stored terminal event; what came between is a gap, told and refilled.
    expectExactly(mine.slice(0, -1), log.slice(0, mine.length - 1));
    expect(mine.length - 1).toBeGreaterThanOrEqual(away);
    expect(mine.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "INTERRUPTED", seq: terminal.seq });
    expect(done.run!.gaps).toEqual([{ fromSeq: mine.at(-2)!.seq + 1, toSeq: terminal.seq - 1, refilled: true }]);
    expect(gapShown).toBe(true);
    expect(papered).toEqual([]);
    const record = await gqlOk(app.url, RUN, { id: runId });
    expect(record.run).toMatchObject({ status: "INTERRUPTED", errorCode: "INTERRUPTED" });
    expect(done.run).toMatchObject({ status: "INTERRUPTED", errorCode: "INTERRUPTED", partialOutput: record.run.partialOutput });
    // The text shown is what the run stored, not what the client happened to see.
    expect(record.run.partialOutput).toBe(textOf(log));
    expect(textOf(mine).length).toBeLessThan(record.run.partialOutput.length);
    const partial = done.messages.filter((m) => m.state === "partial");
    expect(partial.map((m) => m.content)).toEqual([record.run.partialOutput]);
    expect(partial[0]!.incomplete ?? false).toBe(false);
    expect(storedMessages(done)).toEqual((await serverThread(app.url, conversationId)).messages);

    // The next run streams live on the new server, with no new store.
    const next = await store.submit("After the restart");
    if (!next.ok) throw new Error(next.error.message);
    const after = await ended(store, next.value.runId, "COMPLETED");
    expectExactly(ofRun(seen, next.value.runId), await serverLog(app.url, next.value.runId));
    expect(after.messages.at(-1)).toMatchObject({ role: "ASSISTANT", content: "Echo: After the restart", state: "stored" });
    expect(storedMessages(after)).toEqual((await serverThread(app.url, conversationId)).messages);
  });

  it("(c) a refresh mid-run: a new client on the same storage shows the text so far at once and rejoins after the stored seq; an older resume point is exact too", async () => {
    fake.enqueue({ kind: "trickle", tokens: numbered(80), delayMs: 20 });
    const storage = memoryStorage();
    const older = memoryStorage();
    const first = client({ storage });
    const store = first.conversation();
    const seen = seenEvents(store);
    const started = await store.submit("Stream through a refresh");
    if (!started.ok) throw new Error(started.error.message);
    const { runId, conversationId } = started.value;
    const key = `runledger:resume:${conversationId}`;

    await settled(store, (s) => (s.run?.lastSeq ?? 0) >= 6, "six events");
    store.flush();
    older.setItem(key, storage.getItem(key)!);
    await settled(store, (s) => (s.run?.lastSeq ?? 0) >= 20, "twenty events");
    // The page goes away; what it wrote last stays in the tab's storage.
    await first.dispose();
    const kept = JSON.parse(storage.getItem(key)!) as { runId: string; lastSeq: number };
    expect(kept).toMatchObject({ conversationId, runId });
    expect(kept.lastSeq).toBeGreaterThanOrEqual(20);
    const upTo = kept.lastSeq;

    const { client: second, transport } = notingClient(storage);
    const refreshed = second.conversation(conversationId);
    // At once, before any answer: the text streamed up to the stored seq.
    const shown = refreshed.getSnapshot();
    expect(shown.run).toMatchObject({ id: runId, lastSeq: upTo });
    expect(shown.messages.find((m) => m.role === "ASSISTANT")?.content).toBe(textOf(seen.filter((e) => e.seq <= upTo)));
    const seenAfter = seenEvents(refreshed);
    const olderStore = client({ storage: older }).conversation(conversationId);
    const seenOlder = seenEvents(olderStore);

    const done = await ended(refreshed, runId, "COMPLETED");
    const log = await serverLog(app.url, runId);
    // Rejoined after the stored seq: nothing replayed from the start, nothing missing.
    expect(aftersOf(transport, runId)[0]).toBe(upTo);
    expectExactly([...seen.filter((e) => e.seq <= upTo), ...seenAfter], log);
    expect(done.messages.at(-1)!.content).toBe(textOf(log));
    expect(storedMessages(done)).toEqual((await serverThread(app.url, conversationId)).messages);
    // The older point rejoined after its own seq.
    const olderDone = await ended(olderStore, runId, "COMPLETED");
    const olderSeq = (JSON.parse(older.getItem(key) ?? "null") as { lastSeq: number } | null)?.lastSeq;
    expect(olderSeq).toBeUndefined(); // cleared once the run ended
    expect(seenOlder[0]!.seq).toBeGreaterThanOrEqual(7);
    expectExactly([...seen.filter((e) => e.seq < seenOlder[0]!.seq), ...seenOlder], log);
    expect(storedMessages(olderDone)).toEqual(storedMessages(done));
    expect(storage.getItem(key)).toBeNull();
  });
});

describe("the truth about runs", () => {
  it("stop() cancels the run on the server", async () => {
    fake.enqueue({ kind: "trickle", tokens: numbered(300), delayMs: 20 });
    const store = client().conversation();
    const started = await store.submit("Stop me");
    if (!started.ok) throw new Error(started.error.message);
    const { runId, conversationId } = started.value;
    await settled(store, (s) => (s.run?.lastSeq ?? 0) >= 5, "five events");
    const stopped = await store.stop();
    expect(stopped.ok).toBe(true);
    const done = await ended(store, runId, "CANCELLED");
    const record = (await gqlOk(app.url, RUN, { id: runId })).run;
    expect(record).toMatchObject({ status: "CANCELLED", errorCode: "CANCELLED" });
    expect(done.run).toMatchObject({ status: "CANCELLED", errorCode: "CANCELLED", partialOutput: record.partialOutput });
    expect(done.messages.filter((m) => m.state === "partial").map((m) => m.content)).toEqual([record.partialOutput]);
    expect(storedMessages(done)).toEqual((await serverThread(app.url, conversationId)).messages);
    expect((await store.stop()).ok).toBe(false);
  });

  it("detach() only stops listening: the run goes on, no subscription is left, and attach() rejoins after the last seq", async () => {
    fake.enqueue({ kind: "trickle", tokens: numbered(40), delayMs: 20 });
    const store = client().conversation();
    const seen = seenEvents(store);
    const started = await store.submit("Run on without me");
    if (!started.ok) throw new Error(started.error.message);
    const { runId } = started.value;
    await settled(store, (s) => (s.run?.lastSeq ?? 0) >= 5, "five events");
    store.detach();
    // The last event applied (the snapshot is told of changes once a frame, so it may show it a turn later).
    const at = seen.at(-1)!.seq;
    expect(store.getSnapshot().attached).toBe(false);
    await until(() => app.services.bus.stats().runSubscribers === 0 && app.services.bus.stats().changeSubscribers === 0, "the store's subscriptions to end");
    const record = await waitForRun(app.url, runId);
    expect(record.status).toBe("COMPLETED");
    expect(seen.at(-1)!.seq).toBe(at);
    expect(store.getSnapshot().run).toMatchObject({ status: "RUNNING", lastSeq: at });

    store.attach();
    await ended(store, runId, "COMPLETED");
    const log = await serverLog(app.url, runId);
    // A read may tell the outcome first; the store follows the run until its terminal event.
    await until(() => ofRun(seen, runId).some((e) => e.seq === log.at(-1)!.seq), "the terminal event applied");
    expectExactly(ofRun(seen, runId), log);
  });

  it("mirrors QUEUED with its place and reason, then RUNNING and the outcome (ENQUEUE behind the active run)", async () => {
    fake.enqueue({ kind: "trickle", tokens: numbered(50), delayMs: 20 });
    const store = client().conversation();
    const first = await store.submit("First, slowly");
    if (!first.ok) throw new Error(first.error.message);
    await settled(store, (s) => (s.run?.lastSeq ?? 0) >= 3, "the first run streaming");
    const second = await store.submit("Second, queued", { multitask: "ENQUEUE" });
    if (!second.ok) throw new Error(second.error.message);
    const queued = await settled(store, (s) => s.run?.id === second.value.runId && s.run.status === "QUEUED", "the second run queued");
    expect(queued.run).toMatchObject({ queueReason: "BEHIND_ACTIVE_RUN" });
    expect(queued.run!.queuePosition === null || queued.run!.queuePosition >= 1).toBe(true);
    expect(queued.messages.at(-1)).toMatchObject({ role: "USER", content: "Second, queued", state: "sending", runId: second.value.runId });
    const done = await ended(store, second.value.runId, "COMPLETED", 30_000);
    expect(done.run).toMatchObject({ queuePosition: null, queueReason: null });
    expect(storedMessages(done)).toEqual((await serverThread(app.url, first.value.conversationId)).messages);
    expect(done.messages.map((m) => m.content)).toEqual(["First, slowly", numbered(50).join(""), "Second, queued", "Echo: Second, queued"]);
  });
});

describe("follow a conversation, not a run", () => {
  it("stays attached across two runs started elsewhere with plain GraphQL calls", async () => {
    const opening = await startRun(app.url, "Opened elsewhere");
    await waitForRun(app.url, opening.runId);
    const store = client().conversation(opening.conversationId);
    const seen = seenEvents(store);
    await settled(store, (s) => s.phase === "ready" && s.messages.length === 2, "the thread read");
    await until(() => app.services.bus.stats().changeSubscribers >= 1, "the store's notices");

    fake.enqueue({ kind: "trickle", tokens: numbered(20), delayMs: 15 });
    const one = await startRun(app.url, "First from elsewhere", opening.conversationId);
    await settled(store, (s) => s.run?.id === one.runId && s.busy, "the first run followed");
    await ended(store, one.runId, "COMPLETED");
    const two = await startRun(app.url, "Second from elsewhere", opening.conversationId);
    const done = await ended(store, two.runId, "COMPLETED");

    expectExactly(ofRun(seen, one.runId), await serverLog(app.url, one.runId));
    expectExactly(ofRun(seen, two.runId), await serverLog(app.url, two.runId));
    expect(storedMessages(done)).toEqual((await serverThread(app.url, opening.conversationId)).messages);
    expect(done.messages.map((m) => m.content)).toEqual([
      "Opened elsewhere",
      "Echo: Opened elsewhere",
      "First from elsewhere",
      numbered(20).join(""),
      "Second from elsewhere",
      "Echo: Second from elsewhere",
    ]);
  });

  it("a switch of conversation mid-stream unsubscribes cleanly, and a late event never lands in the new one", async () => {
    const other = await startRun(app.url, "The other conversation");
    await waitForRun(app.url, other.runId);
    fake.enqueue({ kind: "trickle", tokens: numbered(60), delayMs: 15 });
    const store = client().conversation();
    const seen: RunEvent[] = [];
    store.onEvent((event) => seen.push(event));
    const started = await store.submit("Switch away from me");
    if (!started.ok) throw new Error(started.error.message);
    const { runId } = started.value;
    await settled(store, (s) => (s.run?.lastSeq ?? 0) >= 5, "five events");
    const before = app.services.bus.stats().runSubscribers;
    const observer = observeRun(app.url, runId);

    store.open(other.conversationId);
    const switchedAt = seen.length;
    expect(store.getSnapshot()).toMatchObject({ conversationId: other.conversationId, phase: "loading", messages: [], run: null });
    const shown = await settled(store, (s) => s.phase === "ready" && s.messages.length === 2, "the other thread");
    expect(shown.messages.map((m) => m.content)).toEqual(["The other conversation", "Echo: The other conversation"]);
    // The switched-from run's stream ended on the server (the observer's is the only one left).
    await until(() => app.services.bus.stats().runSubscribers <= before, "the old run's subscription to end");
    // It streams on to its end; none of it reaches this store.
    await observer.done;
    await waitForRun(app.url, runId);
    expect(seen.slice(switchedAt)).toEqual([]);
    const after = store.getSnapshot();
    expect(after.conversationId).toBe(other.conversationId);
    expect(after.messages.map((m) => m.content)).toEqual(["The other conversation", "Echo: The other conversation"]);
    expect(after.run?.id).toBe(other.runId);
  });
});

describe("safe to retry", () => {
  it("a submit whose answer is lost is sent again with the same idempotency key: one run", async () => {
    const store = client().conversation();
    const lost = proxy.loseResponseTo("RunledgerStartRun");
    const started = await store.submit("Lost on its way back");
    await lost;
    if (!started.ok) throw new Error(started.error.message);
    const { runId, conversationId } = started.value;
    const done = await ended(store, runId, "COMPLETED");
    const thread = await serverThread(app.url, conversationId);
    expect(thread.runs.map((r) => r.id)).toEqual([runId]);
    expect(storedMessages(done)).toEqual(thread.messages);
    expect(done.messages.map((m) => m.content)).toEqual(["Lost on its way back", "Echo: Lost on its way back"]);
  });

  it("a submit refused by the server stays unsent, with the refusal; retry() sends it again with the same key", async () => {
    fake.enqueue({ kind: "trickle", tokens: numbered(30), delayMs: 20 });
    const store = client().conversation();
    const first = await store.submit("Busy for a while");
    if (!first.ok) throw new Error(first.error.message);
    await settled(store, (s) => (s.run?.lastSeq ?? 0) >= 2, "streaming");
    const refused = await store.submit("Not now");
    expect(refused).toMatchObject({
      ok: false,
      error: { code: "RUN_IN_PROGRESS", refusal: { __typename: "RunInProgressError", activeRunId: first.value.runId } },
    });
    const unsent = store.getSnapshot().messages.find((m) => m.state === "unsent")!;
    expect(unsent).toMatchObject({ content: "Not now", error: { code: "RUN_IN_PROGRESS" } });
    await ended(store, first.value.runId, "COMPLETED");
    const retried = await store.retry(unsent.id);
    if (!retried.ok) throw new Error(retried.error.message);
    const done = await ended(store, retried.value.runId, "COMPLETED");
    expect(done.messages.map((m) => m.content)).toEqual(["Busy for a while", numbered(30).join(""), "Not now", "Echo: Not now"]);
  });
});

describe("answering from the page", () => {
  it("respond() answers a tool approval; the run that continues is followed to its answer", async () => {
    const store = client().conversation();
    const started = await store.submit("Please calculate 2 + 3", { agent: "careful" });
    if (!started.ok) throw new Error(started.error.message);
    const waiting = await ended(store, started.value.runId, "WAITING");
    expect(waiting.interrupts).toHaveLength(1);
    const question = waiting.interrupts[0]!;
    if (question.kind !== "tool_approval") throw new Error(`expected a tool approval, got ${question.kind}`);
    expect(question.value.toolCalls).toMatchObject([{ name: "calculator", args: { expression: "2 + 3" } }]);
    expect(question.runId).toBe(started.value.runId);

    const answered = await store.respond({ toolCalls: [{ id: question.value.toolCalls[0]!.id, decision: "approve" }] }, { interruptId: question.id });
    if (!answered.ok) throw new Error(answered.error.message);
    expect(answered.value.kind).toBe("RESUME");
    const done = await ended(store, answered.value.id, "COMPLETED");
    expect(done.interrupts).toEqual([]);
    expect(done.messages.at(-1)).toMatchObject({ role: "ASSISTANT", content: "The result is 5.", state: "stored" });
    expect(storedMessages(done)).toEqual((await serverThread(app.url, started.value.conversationId)).messages);
  });
});
