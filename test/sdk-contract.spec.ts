// @runledger/client's contract names (DESIGN.md section 12) against a real
// server (SQLite, started in this process, the fake Ollama as its model),
// reached through a TCP proxy that can drop every connection: the client's
// options (`transport: "ws"`, a credential provider answering null), the
// conversation snapshot's `conversation`, `runs`, `activeRun`, `lastSeq`,
// `pending` and `connection` (a change of connection told to subscribers,
// batched, with everything else kept), fork and edit in their object forms,
// client.conversations(), loadConversation(client, id) with client.hydrate(),
// and the run store behind useRun (createRunStore): a run followed on its
// own, and one shown from the conversation store that follows it, handed over
// when that store lets it go. Each is compared with the server's own record.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import WebSocket from "ws";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp, tempDatabaseUrl, waitForRun } from "../testkit/app.ts";
import { gqlOk, startRun } from "../testkit/graphql.ts";
import { until } from "../testkit/streaming.ts";
import {
  createRunledgerClient,
  createRunStore,
  loadConversation,
  memoryStorage,
  type ConversationSnapshot,
  type RunledgerClient,
  type RunStore,
} from "../packages/client/src/index.ts";
import { startProxy, type Proxy } from "./sdk/proxy.ts";
import { ended, numbered, sdkClient, serverCheckpoints, serverLog, serverThread, settled, storedMessages, textOf } from "./sdk/harness.ts";

let fake: FakeOllama;
let app: Awaited<ReturnType<typeof startTestApp>>;
let database: ReturnType<typeof tempDatabaseUrl>;
let proxy: Proxy;
let agentsFile: string;
const clients: RunledgerClient[] = [];
const runStores: RunStore[] = [];

beforeAll(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-sdk-contract-"));
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
  database = tempDatabaseUrl("runledger-sdk-contract-db-");
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url, databaseUrl: database.url, env: { RUNLEDGER_CONFIG: agentsFile } });
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
  for (const store of runStores.splice(0)) store.close();
  for (const client of clients.splice(0)) await client.dispose();
  proxy.block(false);
});

function client(url = proxy.url): RunledgerClient {
  const made = sdkClient(url);
  clients.push(made);
  return made;
}

function runStore(made: RunledgerClient, runId: string): RunStore {
  const store = createRunStore(made, runId);
  runStores.push(store);
  return store;
}

const CONVERSATION_INFO = /* GraphQL */ `
  query ContractConversation($id: ID!) {
    conversation(id: $id) { id title agentName expiresAt runs(first: 50) { edges { node { id status startedAt } } } }
  }
`;

interface ServerConversation {
  id: string;
  title: string | null;
  agentName: string;
  expiresAt: string | null;
  runs: { edges: { node: { id: string; status: string; startedAt: string } }[] };
}

async function serverConversation(conversationId: string): Promise<ServerConversation> {
  return (await gqlOk<{ conversation: ServerConversation }>(app.url, CONVERSATION_INFO, { id: conversationId })).conversation;
}

describe("createRunledgerClient's contract options", () => {
  it('transport "ws" is the WebSocket, a credential provider may answer null (no credential), and storage is used', async () => {
    const inner = memoryStorage();
    const written: string[] = [];
    const storage = {
      getItem: (key: string) => inner.getItem(key),
      setItem: (key: string, value: string) => {
        written.push(key);
        inner.setItem(key, value);
      },
      removeItem: (key: string) => inner.removeItem(key),
    };
    let asked = 0;
    const made = createRunledgerClient({
      url: app.url,
      webSocketImpl: WebSocket,
      transport: "ws",
      storage,
      credentials: async (): Promise<string | null> => {
        asked++;
        return null;
      },
    });
    clients.push(made);
    const store = made.conversation();
    await until(() => made.connection.getSnapshot().status === "connected", "connected");
    expect(made.connection.getSnapshot().transport).toBe("websocket");
    fake.enqueue({ kind: "trickle", tokens: numbered(40), delayMs: 15 });
    const sent = await store.submit("Over ws");
    if (!sent.ok) throw new Error(sent.error.message);
    expect(asked).toBeGreaterThan(0);
    // The live run's resume point went to the storage given.
    await settled(store, (s) => s.lastSeq > 2, "a few events");
    await until(() => written.length > 0, "a resume point written");
    const done = await ended(store, sent.value.runId, "COMPLETED");
    expect(storedMessages(done)).toEqual((await serverThread(app.url, sent.value.conversationId)).messages);
  });
});

describe("the conversation snapshot's contract fields", () => {
  it("conversation, runs, activeRun, lastSeq and pending follow two runs, as the server records them", async () => {
    const made = client();
    const store = made.conversation();
    const empty = store.getSnapshot();
    expect(empty).toMatchObject({ conversation: null, runs: [], activeRun: null, lastSeq: 0, pending: [] });
    expect(empty.connection).toBe(made.connection.getSnapshot());

    fake.enqueue({ kind: "trickle", tokens: numbered(60), delayMs: 15 });
    const sending = store.submit("Contract fields");
    // The optimistic message: in `pending` and in `messages`, the same object.
    const optimistic = store.getSnapshot();
    expect(optimistic.pending).toHaveLength(1);
    expect(optimistic.pending[0]).toMatchObject({ role: "USER", content: "Contract fields", state: "sending" });
    expect(optimistic.messages.at(-1)).toBe(optimistic.pending[0]);
    const sent = await sending;
    if (!sent.ok) throw new Error(sent.error.message);
    const { runId, conversationId } = sent.value;

    const streaming = await settled(
      store,
      (s) => s.activeRun?.status === "RUNNING" && s.lastSeq >= 5 && s.pending.length === 0,
      "the run streaming, the message stored",
    );
    expect(streaming.activeRun!.id).toBe(runId);
    expect(streaming.activeRun).toBe(streaming.run);
    expect(streaming.lastSeq).toBe(streaming.activeRun!.lastSeq);
    expect(streaming.busy).toBe(true);
    expect(streaming.runs.map((r) => r.id)).toEqual([runId]);
    expect(streaming.conversation).toMatchObject({ id: conversationId, agentName: "default" });

    const first = await ended(store, runId, "COMPLETED");
    const log = await serverLog(app.url, runId);
    expect(first).toMatchObject({ activeRun: null, busy: false, lastSeq: log.length, pending: [] });
    expect(first.runs).toEqual([first.run]);

    // A second run: both listed, oldest first, as the server orders them.
    fake.enqueue({ kind: "trickle", tokens: numbered(30, "b"), delayMs: 10 });
    const again = await store.submit("And again");
    if (!again.ok) throw new Error(again.error.message);
    const second = await ended(store, again.value.runId, "COMPLETED");
    const server = await serverConversation(conversationId);
    const byStart = [...server.runs.edges.map((e) => e.node)].sort((a, b) => (a.startedAt < b.startedAt ? -1 : 1));
    expect(second.runs.map((r) => [r.id, r.status])).toEqual(byStart.map((r) => [r.id, r.status]));
    expect(second.runs.map((r) => r.id)).toEqual([runId, again.value.runId]);
    expect(second.conversation).toEqual({ id: server.id, title: server.title, agentName: server.agentName, expiresAt: server.expiresAt });
    // A date set elsewhere is shown once the conversation is told changed.
    const expiresAt = "2027-01-01T00:00:00.000Z";
    const set = await gqlOk(
      app.url,
      `mutation ($id: ID!, $at: DateTime) { setConversationExpiry(input: { conversationId: $id, expiresAt: $at }) { __typename } }`,
      { id: conversationId, at: expiresAt },
    );
    expect(set.setConversationExpiry.__typename).toBe("SetConversationExpirySuccess");
    await settled(store, (s) => s.conversation?.expiresAt === expiresAt, "the expiry shown");
    expect((await serverConversation(conversationId)).expiresAt).toBe(expiresAt);
    expect(second.lastSeq).toBe((await serverLog(app.url, again.value.runId)).length);

    // Read again with nothing new: the same objects.
    const before = store.getSnapshot();
    store.detach();
    store.attach();
    await settled(store, (s) => s.attached && s.phase === "ready", "read again");
    await new Promise((resolve) => setTimeout(resolve, 100));
    const after = store.getSnapshot();
    expect(after.conversation).toBe(before.conversation);
    expect(after.messages).toBe(before.messages);
    expect(after.pending).toBe(before.pending);
  });

  it("pending holds a message the server refused (unsent, with its error) until it is discarded", async () => {
    const made = client();
    const store = made.conversation();
    fake.enqueue({ kind: "trickle", tokens: numbered(80), delayMs: 15 });
    const sent = await store.submit("Busy now");
    if (!sent.ok) throw new Error(sent.error.message);
    await settled(store, (s) => s.activeRun !== null && s.lastSeq > 2, "the run streaming");
    const refused = await store.submit("Not now");
    expect(refused).toMatchObject({ ok: false, error: { code: "RUN_IN_PROGRESS" } });
    const shown = store.getSnapshot();
    expect(shown.pending).toHaveLength(1);
    expect(shown.pending[0]).toMatchObject({ content: "Not now", state: "unsent", error: { code: "RUN_IN_PROGRESS" } });
    expect(shown.activeRun!.id).toBe(sent.value.runId);
    store.discard(shown.pending[0]!.id);
    expect(store.getSnapshot().pending).toEqual([]);
    await ended(store, sent.value.runId, "COMPLETED");
  });

  it("connection: a dropped connection is told to subscribers as a new snapshot (batched), with everything else kept, and the stream goes on", async () => {
    const made = client();
    const store = made.conversation();
    fake.enqueue({ kind: "trickle", tokens: numbered(120), delayMs: 15 });
    const sent = await store.submit("Keep streaming through a drop");
    if (!sent.ok) throw new Error(sent.error.message);
    await settled(store, (s) => s.connection.status === "connected" && s.lastSeq > 5, "connected and streaming");
    const seen: ConversationSnapshot[] = [];
    store.subscribe(() => seen.push(store.getSnapshot()));
    const beforeDrop = store.getSnapshot();

    proxy.block(true);
    proxy.dropAll();
    await settled(store, (s) => s.connection.status === "reconnecting", "the snapshot tells of the drop");
    const dropped = store.getSnapshot();
    expect(dropped.connection).toBe(made.connection.getSnapshot());
    // Only the connection changed: the rest kept its objects.
    expect(dropped.conversation).toBe(beforeDrop.conversation);
    expect(dropped.runs.length).toBe(beforeDrop.runs.length);
    proxy.block(false);
    await settled(store, (s) => s.connection.status === "connected" && s.connection.reconnects >= 1, "connected again");
    const done = await ended(store, sent.value.runId, "COMPLETED");
    expect(done.messages.at(-1)!.content).toBe(numbered(120).join(""));
    expect(done.lastSeq).toBe((await serverLog(app.url, sent.value.runId)).length);
    // Every notification carried a new snapshot; the statuses seen include the drop and the return.
    const statuses = seen.map((s) => s.connection.status);
    expect(statuses).toContain("reconnecting");
    expect(statuses.at(-1)).toBe("connected");
    for (let i = 1; i < seen.length; i++) expect(seen[i]).not.toBe(seen[i - 1]);
  });
});

describe("fork and edit in their contract forms", () => {
  it("fork(checkpointId, {message, open: false}) starts a run on the fork and leaves the store; edit({checkpointId, values, asNode}) writes values; edit({message}) refuses a checkpoint not ending on a user message", async () => {
    const first = await startRun(app.url, "Fork me");
    await waitForRun(app.url, first.runId);
    const { conversationId } = first;
    const checkpoints = await serverCheckpoints(app.url, conversationId);
    const answered = checkpoints.find((c) => c.lastMessage?.role === "ASSISTANT")!;
    const asked = checkpoints.find((c) => c.lastMessage?.role === "USER")!;
    const made = client();
    const store = made.conversation(conversationId);
    await settled(store, (s) => s.phase === "ready" && s.messages.length === 2, "the thread read");

    fake.enqueue({ kind: "trickle", tokens: numbered(10, "f"), delayMs: 5 });
    const forked = await store.fork(answered.id, { message: "In the fork", open: false });
    if (!forked.ok) throw new Error(forked.error.message);
    expect(forked.value.runId).not.toBeNull();
    expect(store.getSnapshot().conversationId).toBe(conversationId);
    await waitForRun(app.url, forked.value.runId!);
    expect((await serverThread(app.url, forked.value.conversationId)).messages.map((m) => m.content)).toEqual([
      "Fork me",
      "Echo: Fork me",
      "In the fork",
      numbered(10, "f").join(""),
    ]);

    const refused = await store.edit({ checkpointId: answered.id, message: "Not a user message" });
    expect(refused).toMatchObject({ ok: false, error: { code: "VALIDATION" } });
    expect(await store.edit({ checkpointId: asked.id })).toMatchObject({ ok: false, error: { code: "VALIDATION" } });

    const typo = (await serverThread(app.url, conversationId)).messages[0]!;
    const edited = await store.edit({
      checkpointId: asked.id,
      values: { messages: [{ id: typo.id, role: "USER", content: "Forked me" }] },
      asNode: "__start__",
    });
    if (!edited.ok) throw new Error(edited.error.message);
    expect(edited.value.run).toMatchObject({ kind: "EDIT", status: "COMPLETED" });
    const shown = await settled(store, (s) => s.resumable && s.messages.length === 1, "the edited thread");
    expect(shown.messages.map((m) => [m.id, m.content])).toEqual([[typo.id, "Forked me"]]);
    expect(shown.runs.map((r) => r.id)).toContain(edited.value.run.id);
  });
});

describe("the client's other contract entries", () => {
  it("client.conversations(filter) lists the caller's conversations live", async () => {
    const made = client();
    const list = made.conversations({ pageSize: 5 });
    await until(() => list.getSnapshot().phase === "ready", "the first page");
    const started = await startRun(app.url, "Listed live");
    await until(() => list.getSnapshot().rows[0]?.id === started.conversationId, "the new conversation on top");
    await waitForRun(app.url, started.runId);
    const ids = list.getSnapshot().rows.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    await until(() => list.getSnapshot().rows[0]?.latestRun?.status === "COMPLETED", "its run shown ended");
    list.close();
  });

  it("loadConversation(client, id) answers plain JSON, and client.hydrate(state) shows the same", async () => {
    const started = await startRun(app.url, "Load and hydrate");
    await waitForRun(app.url, started.runId);
    const made = client();
    const state = await loadConversation(made, started.conversationId);
    expect(JSON.parse(JSON.stringify(state))).toEqual(state);
    const hydrated = made.hydrate(JSON.parse(JSON.stringify(state)), { attach: false });
    const shown = hydrated.getSnapshot();
    expect(storedMessages(shown)).toEqual((await serverThread(app.url, started.conversationId)).messages);
    expect(shown.conversation).toMatchObject({ id: started.conversationId });
    expect(shown.runs.map((r) => r.id)).toEqual([started.runId]);
    hydrated.close();
  });
});

describe("the run store (useRun)", () => {
  it("a run no store follows: read and followed on its own to its end, exactly the server's text", async () => {
    fake.enqueue({ kind: "trickle", tokens: numbered(60, "o"), delayMs: 15 });
    const started = await startRun(app.url, "Followed by id");
    const made = client();
    const store = runStore(made, started.runId);
    await until(() => store.getSnapshot().phase === "ready", "the run read");
    expect(store.getSnapshot()).toMatchObject({ source: "own", conversationId: started.conversationId, runId: started.runId });
    await until(() => store.getSnapshot().run?.status === "COMPLETED" && store.getSnapshot().messages.every((m) => m.state === "stored"), "the run ended");
    const log = await serverLog(app.url, started.runId);
    const shown = store.getSnapshot();
    expect(shown.run!.lastSeq).toBe(log.length);
    // Ended: the messages it stored (its input included) stand in for what streamed.
    expect(shown.messages.map((m) => m.content)).toEqual(["Followed by id", numbered(60, "o").join("")]);
    expect(textOf(log)).toBe(numbered(60, "o").join(""));

    // An ended run: read from its record, nothing to follow.
    const later = runStore(made, started.runId);
    await until(() => later.getSnapshot().run?.status === "COMPLETED", "the ended run read");
    expect(later.getSnapshot().messages.map((m) => m.content)).toEqual(["Followed by id", numbered(60, "o").join("")]);
    // No such run.
    const missing = runStore(made, "8f0c5d4a-0000-4000-8000-000000000000");
    await until(() => missing.getSnapshot().phase === "missing", "a missing run");
  });

  it("a run a conversation store follows: shown from that store, and followed on from its last seq when the store moves away", async () => {
    const other = await startRun(app.url, "Somewhere else");
    await waitForRun(app.url, other.runId);
    const made = client();
    const conversation = made.conversation();
    fake.enqueue({ kind: "trickle", tokens: numbered(120, "m"), delayMs: 15 });
    const sent = await conversation.submit("Mirrored");
    if (!sent.ok) throw new Error(sent.error.message);
    const store = runStore(made, sent.value.runId);
    expect(store.getSnapshot().source).toBe("conversation");
    await until(() => (store.getSnapshot().run?.lastSeq ?? 0) > 10, "events shown");
    const both = conversation.getSnapshot();
    await until(() => store.getSnapshot().run === conversation.getSnapshot().run, "the same run state as the conversation's");
    expect(both.conversationId).toBe(sent.value.conversationId);
    expect(store.getSnapshot().conversationId).toBe(sent.value.conversationId);

    // The conversation store moves away mid-run: the run store follows on by itself.
    conversation.open(other.conversationId);
    await until(() => store.getSnapshot().source === "own", "handed over");
    await until(() => store.getSnapshot().run?.status === "COMPLETED" && store.getSnapshot().messages.every((m) => m.state === "stored"), "the run ended");
    const log = await serverLog(app.url, sent.value.runId);
    expect(store.getSnapshot().run!.lastSeq).toBe(log.length);
    expect(store.getSnapshot().messages.map((m) => m.content)).toEqual(["Mirrored", numbered(120, "m").join("")]);
  });
});
