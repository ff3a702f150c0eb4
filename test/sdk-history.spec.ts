// @runledger/client's history against a real server (SQLite, started in this
// process, the fake Ollama as its model): a long thread shown a page at a time
// (loadOlder() prepends the earlier messages exactly once, in order, while a
// run streams), a conversation's checkpoints listed a page at a time and kept
// current as runs end, a fork from a listed checkpoint followed to its
// answer, and an edit at a listed checkpoint re-run. Each compares the store
// with what the server stored: the thread's messages, the checkpoints.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp, tempDatabaseUrl, waitForRun } from "../testkit/app.ts";
import { startRun } from "../testkit/graphql.ts";
import { until } from "../testkit/streaming.ts";
import { createCheckpointList, type CheckpointListStore, type ConversationSnapshot, type RunledgerClient } from "../packages/client/src/index.ts";
import { ended, numbered, sdkClient, serverCheckpoints, serverThread, settled, storedMessages, type ServerCheckpoint } from "./sdk/harness.ts";

let fake: FakeOllama;
let app: Awaited<ReturnType<typeof startTestApp>>;
let database: ReturnType<typeof tempDatabaseUrl>;
const clients: RunledgerClient[] = [];
const lists: CheckpointListStore[] = [];

beforeAll(async () => {
  database = tempDatabaseUrl("runledger-sdk-history-db-");
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url, databaseUrl: database.url });
});

afterAll(async () => {
  await app?.close();
  await fake?.close();
  database?.remove();
});

afterEach(async () => {
  for (const list of lists.splice(0)) list.close();
  for (const client of clients.splice(0)) await client.dispose();
});

function client(): RunledgerClient {
  const made = sdkClient(app.url);
  clients.push(made);
  return made;
}

function checkpointList(made: RunledgerClient, conversationId: string, pageSize: number): CheckpointListStore {
  const list = createCheckpointList(made, conversationId, { pageSize });
  lists.push(list);
  return list;
}

/** A conversation of `turns` turns ("<prefix> 1", its echo, ...), each run to its end through the API. */
async function conversationOf(turns: number, prefix = "Turn"): Promise<string> {
  let conversationId: string | undefined;
  for (let i = 1; i <= turns; i++) {
    const started = await startRun(app.url, `${prefix} ${i}`, conversationId);
    conversationId = started.conversationId;
    const run = await waitForRun(app.url, started.runId);
    expect(run.status).toBe("COMPLETED");
  }
  return conversationId!;
}

function listed(list: CheckpointListStore): ServerCheckpoint[] {
  return list.getSnapshot().checkpoints.map((c) => ({
    id: c.id,
    source: c.source,
    step: c.step,
    messageCount: c.messageCount,
    lastMessage: c.lastMessage ? { id: c.lastMessage.id, role: c.lastMessage.role, content: c.lastMessage.content } : null,
  }));
}

/** The snapshot shows no message twice: no id twice, and no text of the thread twice. */
function expectNoDuplicates(snapshot: ConversationSnapshot): void {
  const ids = snapshot.messages.map((m) => m.id);
  expect(new Set(ids).size).toBe(ids.length);
  const texts = snapshot.messages.map((m) => `${m.role}:${m.content}`).filter((t) => !t.endsWith(":"));
  expect(new Set(texts).size).toBe(texts.length);
}

describe("paginated messages", () => {
  it("a long thread shows its newest page; loadOlder() prepends the earlier pages exactly once, in order, while a run streams, with no duplicate", async () => {
    const conversationId = await conversationOf(8);
    const before = (await serverThread(app.url, conversationId)).messages;
    expect(before).toHaveLength(16);

    const made = client();
    const store = made.conversation(conversationId, { pageSize: 5 });
    // A store that never shows older messages: its window grows with the thread, it never slides.
    const steady = made.conversation(conversationId, { pageSize: 4 });
    const first = await settled(store, (s) => s.phase === "ready" && s.messages.length > 0, "the first read");
    expect(storedMessages(first)).toEqual(before.slice(11));
    expect(first).toMatchObject({ hasOlder: true, olderCount: 11, loadingOlder: false });
    await settled(steady, (s) => s.phase === "ready" && s.messages.length > 0, "the other store's first read");
    expect(storedMessages(steady.getSnapshot())).toEqual(before.slice(12));

    // Every snapshot from here on, while a run streams and older pages are prepended.
    const seen: ConversationSnapshot[] = [];
    store.subscribe(() => seen.push(store.getSnapshot()));
    const tokens = numbered(80, "h");
    fake.enqueue({ kind: "trickle", tokens, delayMs: 15 });
    const sent = await store.submit("Turn 9");
    if (!sent.ok) throw new Error(sent.error.message);
    const { runId } = sent.value;

    const olderPages: number[] = [];
    for (const atToken of [5, 20, 35]) {
      await settled(store, (s) => s.messages.some((m) => m.state === "streaming" && m.content.includes(`h${atToken} `)), `token h${atToken}`);
      const shown = store.getSnapshot();
      const storedBefore = shown.messages.filter((m) => m.state === "stored");
      const added = await store.loadOlder();
      olderPages.push(added);
      const after = store.getSnapshot();
      // Prepended: the earlier messages, then exactly what was shown, the same objects.
      const olderCount = 11 - olderPages.reduce((a, b) => a + b, 0);
      expect(after.olderCount).toBe(olderCount);
      expect(after.hasOlder).toBe(olderCount > 0);
      expect(after.messages.slice(0, added).map((m) => m.id)).toEqual(before.slice(olderCount, olderCount + added).map((m) => m.id));
      expect(after.messages.slice(added, added + storedBefore.length)).toEqual(storedBefore);
      for (let i = 0; i < storedBefore.length; i++) expect(after.messages[added + i]).toBe(storedBefore[i]);
      expect(after.messages.at(-1)!.state).toBe("streaming");
    }
    expect(olderPages).toEqual([5, 5, 1]);
    expect(await store.loadOlder()).toBe(0);
    expect(store.getSnapshot()).toMatchObject({ hasOlder: false, olderCount: 0 });

    const done = await ended(store, runId, "COMPLETED");
    const thread = (await serverThread(app.url, conversationId)).messages;
    expect(thread).toHaveLength(18);
    expect(storedMessages(done)).toEqual(thread);
    expect(done.messages.at(-1)!.content).toBe(tokens.join(""));
    for (const snapshot of seen) expectNoDuplicates(snapshot);
    // The shown stored messages were always a run of the thread's, in its order.
    const order = new Map(thread.map((m, i) => [m.id, i]));
    for (const snapshot of seen) {
      const positions = snapshot.messages.filter((m) => m.state === "stored").map((m) => order.get(m.id)!);
      expect(positions).toEqual(positions.map((_, i) => positions[0]! + i));
    }

    // The other store kept its window: the four it showed and the run's two.
    const grown = await ended(steady, runId, "COMPLETED");
    expect(grown).toMatchObject({ hasOlder: true, olderCount: 12 });
    expect(storedMessages(grown)).toEqual(thread.slice(12));
  });

  it("a loadOlder() before the thread is read waits for the read (loadingOlder), then shows the page before the newest", async () => {
    const conversationId = await conversationOf(4, "Early");
    const thread = (await serverThread(app.url, conversationId)).messages;
    const store = client().conversation(conversationId, { pageSize: 3, attach: false });
    const waiting = store.loadOlder(2);
    expect(store.getSnapshot()).toMatchObject({ phase: "loading", loadingOlder: true, hasOlder: false });
    store.attach();
    expect(await waiting).toBe(2);
    const shown = store.getSnapshot();
    expect(shown).toMatchObject({ phase: "ready", loadingOlder: false, hasOlder: true, olderCount: 3 });
    expect(storedMessages(shown)).toEqual(thread.slice(3));
    // Another conversation: its window starts again from its newest page.
    const other = await conversationOf(3, "Other");
    store.open(other);
    const switched = await settled(store, (s) => s.phase === "ready" && s.conversationId === other && s.messages.length > 0, "the other conversation");
    expect(switched).toMatchObject({ hasOlder: true, olderCount: 3 });
    expect(storedMessages(switched)).toEqual((await serverThread(app.url, other)).messages.slice(3));
  });
});

describe("the checkpoint list", () => {
  it("lists the newest page first, older pages on loadOlder(), and stays current as runs end, exactly as the server stores them", async () => {
    const conversationId = await conversationOf(3, "Checkpointed");
    const stored = await serverCheckpoints(app.url, conversationId);
    expect(stored).toHaveLength(9);
    const made = client();
    const list = checkpointList(made, conversationId, 4);
    await until(() => list.getSnapshot().phase === "ready", "the newest page");
    expect(listed(list)).toEqual(stored.slice(5));
    expect(list.getSnapshot()).toMatchObject({ conversationId, hasOlder: true, loadingOlder: false, error: null });

    const loading = list.loadOlder();
    expect(list.getSnapshot().loadingOlder).toBe(true);
    expect(await loading).toBe(4);
    expect(listed(list)).toEqual(stored.slice(1));
    expect(await list.loadOlder()).toBe(1);
    expect(listed(list)).toEqual(stored);
    expect(list.getSnapshot()).toMatchObject({ hasOlder: false, loadingOlder: false });
    expect(await list.loadOlder()).toBe(0);
    const rows = list.getSnapshot().checkpoints;

    // A run started elsewhere ends: its checkpoints join the list, whose earlier rows stay the same objects.
    fake.enqueue({ kind: "trickle", tokens: numbered(20, "c"), delayMs: 10 });
    const elsewhere = await startRun(app.url, "Checkpointed 4", conversationId);
    await waitForRun(app.url, elsewhere.runId);
    const now = await serverCheckpoints(app.url, conversationId);
    expect(now).toHaveLength(12);
    await until(
      () => list.getSnapshot().checkpoints.length === 12 && list.getSnapshot().checkpoints.at(-1)!.run?.status === "COMPLETED",
      "the run's checkpoints listed, the run ended",
    );
    expect(listed(list)).toEqual(now);
    expect(list.getSnapshot().checkpoints.slice(0, 9)).toEqual(rows);
    for (let i = 0; i < 9; i++) expect(list.getSnapshot().checkpoints[i]).toBe(rows[i]);
    expect(list.getSnapshot().checkpoints.at(-1)!.run).toMatchObject({ id: elsewhere.runId, kind: "START", status: "COMPLETED" });

    // A run of a conversation store on the same client: the list is current when it ends.
    const store = made.conversation(conversationId);
    await settled(store, (s) => s.phase === "ready", "the conversation read");
    const sent = await store.submit("Checkpointed 5");
    if (!sent.ok) throw new Error(sent.error.message);
    await ended(store, sent.value.runId, "COMPLETED");
    await until(() => list.getSnapshot().checkpoints.length === 15, "the store's run's checkpoints listed");
    expect(listed(list)).toEqual(await serverCheckpoints(app.url, conversationId));

    // More than a page came since a list that loaded older pages: it joins them with the checkpoints between.
    const small = checkpointList(made, conversationId, 2);
    await until(() => small.getSnapshot().phase === "ready", "the small list");
    expect(await small.loadOlder()).toBe(2);
    const next = await startRun(app.url, "Checkpointed 6", conversationId);
    await waitForRun(app.url, next.runId);
    await until(() => small.getSnapshot().checkpoints.length === 7, "the small list joined to the newest page");
    expect(listed(small)).toEqual((await serverCheckpoints(app.url, conversationId)).slice(-7));
    expect(small.getSnapshot().hasOlder).toBe(true);

    // A conversation that does not exist.
    const missing = checkpointList(made, "8f0c5d4a-0000-4000-8000-000000000000", 5);
    await until(() => missing.getSnapshot().phase === "missing", "the missing conversation");
    expect(missing.getSnapshot().checkpoints).toEqual([]);
  });

  it("fork from a listed checkpoint: the store follows the new conversation to its answer, and the source stays as it was", async () => {
    const source = await conversationOf(2, "Forked");
    const sourceThread = (await serverThread(app.url, source)).messages;
    const made = client();
    const list = checkpointList(made, source, 20);
    await until(() => list.getSnapshot().phase === "ready", "the source's checkpoints");
    const firstAnswer = sourceThread[1]!;
    expect(firstAnswer.content).toBe("Echo: Forked 1");
    const at = list.getSnapshot().checkpoints.find((c) => c.lastMessage?.id === firstAnswer.id)!;
    expect(at).toBeDefined();

    const store = made.conversation(source);
    await settled(store, (s) => s.phase === "ready" && s.messages.length === 4, "the source read");
    fake.enqueue({ kind: "trickle", tokens: numbered(30, "k"), delayMs: 10 });
    const forked = await store.fork(at.id, { message: "A question in the fork" });
    if (!forked.ok) throw new Error(forked.error.message);
    const { conversationId: fork, runId } = forked.value;
    expect(fork).not.toBe(source);
    expect(runId).not.toBeNull();
    expect(store.getSnapshot().conversationId).toBe(fork);

    const done = await ended(store, runId!, "COMPLETED");
    const forkThread = await serverThread(app.url, fork);
    expect(storedMessages(done)).toEqual(forkThread.messages);
    expect(done.messages.map((m) => m.content)).toEqual(["Forked 1", "Echo: Forked 1", "A question in the fork", numbered(30, "k").join("")]);
    expect(done.run).toMatchObject({ id: runId, status: "COMPLETED" });
    expect((await serverThread(app.url, source)).messages).toEqual(sourceThread);

    // The fork's own checkpoints, listed as the server stores them.
    const forkList = checkpointList(made, fork, 20);
    await until(() => forkList.getSnapshot().phase === "ready", "the fork's checkpoints");
    expect(listed(forkList)).toEqual(await serverCheckpoints(app.url, fork));
    expect(listed(forkList).at(-1)!.lastMessage).toMatchObject({ role: "ASSISTANT", content: numbered(30, "k").join("") });
  });

  it("edit at a listed checkpoint and re-run: the EDIT run completes, the re-run ends COMPLETED, and the thread holds the edited message as the server stores it", async () => {
    const first = await startRun(app.url, "Frist question");
    const { conversationId } = first;
    await waitForRun(app.url, first.runId);
    const second = await startRun(app.url, "Second question", conversationId);
    await waitForRun(app.url, second.runId);
    const original = (await serverThread(app.url, conversationId)).messages;
    expect(original.map((m) => m.content)).toEqual(["Frist question", "Echo: Frist question", "Second question", "Echo: Second question"]);
    const typo = original[0]!;

    const made = client();
    const list = checkpointList(made, conversationId, 20);
    await until(() => list.getSnapshot().phase === "ready", "the checkpoints");
    const listedBefore = list.getSnapshot().checkpoints.length;
    // The checkpoint that added the message: the oldest whose last message it is.
    const at = list.getSnapshot().checkpoints.find((c) => c.lastMessage?.id === typo.id)!;
    expect(at).toBeDefined();

    const store = made.conversation(conversationId);
    await settled(store, (s) => s.phase === "ready" && s.messages.length === 4, "the thread read");
    // `message` replaces the user message the checkpoint added: {messages: [{id, role: "USER", content}]} as __start__.
    const edited = await store.edit({ checkpointId: at.id, message: "First question" });
    if (!edited.ok) throw new Error(edited.error.message);
    expect(edited.value.run).toMatchObject({ kind: "EDIT", status: "COMPLETED" });
    expect(edited.value.checkpointId).not.toBeNull();
    const afterEdit = await settled(store, (s) => s.resumable && s.messages.length === 1, "the edited thread read");
    expect(afterEdit.messages.map((m) => [m.id, m.content, m.state])).toEqual([[typo.id, "First question", "stored"]]);

    fake.enqueue({ kind: "trickle", tokens: numbered(25, "e"), delayMs: 10 });
    const rerun = await store.resume();
    if (!rerun.ok) throw new Error(rerun.error.message);
    expect(rerun.value.kind).toBe("RESUME");
    const done = await ended(store, rerun.value.id, "COMPLETED");
    const thread = await serverThread(app.url, conversationId);
    expect(storedMessages(done)).toEqual(thread.messages);
    expect(thread.messages[0]).toMatchObject({ id: typo.id, role: "USER", content: "First question" });
    expect(done.messages.map((m) => m.content)).toEqual(["First question", numbered(25, "e").join("")]);
    const kinds = thread.runs.map((r) => [r.kind, r.status]);
    expect(kinds).toContainEqual(["EDIT", "COMPLETED"]);
    expect(kinds).toContainEqual(["RESUME", "COMPLETED"]);

    // The list is current: the edit's checkpoint and the re-run's, as the server stores them.
    await until(
      async () => JSON.stringify(listed(list)) === JSON.stringify(await serverCheckpoints(app.url, conversationId)),
      "the list current after the re-run",
    );
    expect(list.getSnapshot().checkpoints.length).toBeGreaterThan(listedBefore);
    const editCheckpoint = list.getSnapshot().checkpoints.find((c) => c.id === edited.value.checkpointId)!;
    expect(editCheckpoint).toMatchObject({ source: "UPDATE", lastMessage: { id: typo.id, content: "First question" } });
    expect(editCheckpoint.parent?.id).toBe(at.id);
  });
});
