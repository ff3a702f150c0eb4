// What a fast stream costs a page: a conversation store tells its listeners
// of streamed changes at most once per scheduled turn (an animation frame in a
// browser, 16 ms in Node, or the `schedule` given), and its snapshots are
// structurally shared, so the 2,000 messages a token does not touch keep their
// objects (a view skips them by identity) and a read that brings nothing new
// tells nobody. Played through the test transport, a small runledger in memory.
import { afterEach, describe, expect, it } from "vitest";
import {
  createRunledgerClient,
  memoryStorage,
  syncScheduler,
  type ConversationSnapshot,
  type RunEvent,
  type RunledgerClient,
  type Scheduler,
} from "../packages/client/src/index.ts";
import { createTestTransport, type Message, type RecordedRun } from "../packages/client/src/testing.ts";
import { ended, settled } from "./sdk/harness.ts";

const clients: RunledgerClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) await client.dispose();
});

function testClient(transport: ReturnType<typeof createTestTransport>, schedule?: Scheduler): RunledgerClient {
  const client = createRunledgerClient({ transport, storage: memoryStorage(), ...(schedule ? { schedule } : {}) });
  clients.push(client);
  return client;
}

/** A thread of `n` stored messages, a question and an answer each. */
function longThread(n: number): Message[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `stored-${i}`,
    role: i % 2 === 0 ? "USER" : "ASSISTANT",
    content: i % 2 === 0 ? `Question ${i / 2}` : `Answer ${(i - 1) / 2}, at some length to look like a reply.`,
    toolCalls: [],
    toolCallId: null,
    name: null,
  }));
}

/** A run that streams `count` tokens into one answer. */
function streaming(count: number): RecordedRun {
  const at = new Date(0).toISOString();
  const base = { runId: "", at };
  const tokens = Array.from({ length: count }, (_, i) => `w${i} `);
  const events: RunEvent[] = [
    { __typename: "RunStatusEvent", seq: 0, status: "RUNNING", errorCode: null, errorMessage: null, ...base },
    ...tokens.map((text): RunEvent => ({ __typename: "TokenEvent", seq: 0, text, messageId: "answer", node: "agent", ...base })),
    { __typename: "RunStatusEvent", seq: 0, status: "COMPLETED", errorCode: null, errorMessage: null, ...base },
  ];
  return {
    events,
    messages: [
      { id: "question", role: "USER", content: "", toolCalls: [], toolCallId: null, name: null },
      { id: "answer", role: "ASSISTANT", content: tokens.join(""), toolCalls: [], toolCallId: null, name: null },
    ],
  };
}

/** Every snapshot the store tells its listeners of, with when. */
function told(store: { subscribe(listener: () => void): () => void; getSnapshot(): ConversationSnapshot }, events: () => number = () => 0) {
  const seen: { at: number; events: number; snapshot: ConversationSnapshot }[] = [];
  store.subscribe(() => seen.push({ at: performance.now(), events: events(), snapshot: store.getSnapshot() }));
  return seen;
}

describe("token updates, batched", () => {
  it("a 2,000-message thread under a 100 tokens/s stream: told at most once per 16 ms turn, and the untouched messages keep their objects", async () => {
    const tokens = 150;
    const transport = createTestTransport({ script: () => streaming(tokens), intervalMs: 10 });
    const conversationId = transport.addConversation({ title: "Long", messages: longThread(2_000) });
    const store = testClient(transport).conversation(conversationId);
    const ready = await settled(store, (s) => s.phase === "ready", "the thread read");
    expect(ready.messages).toHaveLength(2_000);
    const stored = ready.messages;

    const applied: number[] = [];
    store.onEvent(() => applied.push(performance.now()));
    const seen = told(store, () => applied.length);
    const started = await store.submit("Stream into a long thread");
    if (!started.ok) throw new Error(started.error.message);
    const done = await ended(store, started.value.runId, "COMPLETED");

    // Every token was applied, one by one; the listeners were told far fewer times: at most once per 16 ms turn.
    expect(applied.length).toBe(tokens + 2);
    const streamed = seen.filter((s) => s.events > 0 && s.at <= applied.at(-1)! + 50);
    const elapsed = applied.at(-1)! - applied[0]!;
    expect(elapsed).toBeGreaterThan(tokens * 9);
    expect(streamed.length).toBeLessThanOrEqual(Math.ceil(elapsed / 16) + 3);
    expect(streamed.length).toBeLessThan(applied.length * 0.8);
    // Each one showed every token applied before it: nothing is held back past its turn.
    for (const { events, snapshot } of streamed) {
      const answer = snapshot.messages.find((m) => m.id === "answer" || (m.role === "ASSISTANT" && m.state === "streaming"));
      const shownTokens = answer ? answer.content.split(" ").length - 1 : 0;
      expect(shownTokens).toBe(Math.min(Math.max(events - 1, 0), tokens));
    }

    // The 2,000 stored messages are the same objects in every snapshot told, the one after the run's read included.
    for (const { snapshot } of [...seen, { snapshot: done }]) {
      expect(snapshot.messages.length).toBeGreaterThanOrEqual(2_000);
      for (let i = 0; i < 2_000; i++) if (snapshot.messages[i] !== stored[i]) throw new Error(`message ${i} was made again`);
    }
    expect(done.messages.slice(2_000).map((m) => [m.role, m.state])).toEqual([
      ["USER", "stored"],
      ["ASSISTANT", "stored"],
    ]);
    expect(done.messages.at(-1)!.content).toBe(streaming(tokens).messages[1]!.content);
  });

  it("told on every change with syncScheduler: the same stream tells once per event at least", async () => {
    const tokens = 60;
    const transport = createTestTransport({ script: () => streaming(tokens), intervalMs: 1 });
    const store = testClient(transport, syncScheduler).conversation();
    const seen = told(store);
    const started = await store.submit("Every token");
    if (!started.ok) throw new Error(started.error.message);
    await ended(store, started.value.runId, "COMPLETED");
    const contents = new Set(seen.map((s) => s.snapshot.messages.find((m) => m.role === "ASSISTANT")?.content).filter(Boolean));
    // Every prefix of the answer was shown.
    expect(contents.size).toBeGreaterThanOrEqual(tokens);
  });

  it("a schedule of your own: 300 events played at once are one notification, when it says; an action's outcome is told at once", async () => {
    const turns: (() => void)[] = [];
    const transport = createTestTransport({ script: () => streaming(300), autoplay: false });
    const store = testClient(transport, (flush) => turns.push(flush)).conversation();
    const seen = told(store);
    const sending = store.submit("Held until the turn");
    // The optimistic message is an action's outcome: told at once, not at the next turn.
    expect(seen).toHaveLength(1);
    expect(seen[0]!.snapshot.messages).toMatchObject([{ role: "USER", state: "sending" }]);
    const started = await sending;
    if (!started.ok) throw new Error(started.error.message);
    const { runId } = started.value;
    const afterSubmit = seen.length;
    while (!transport.sent.some((s) => s.name === "RunledgerRunEvents")) await new Promise((r) => setTimeout(r, 1));
    await new Promise((r) => setTimeout(r, 5));
    for (const flush of turns.splice(0)) flush();
    const beforeTokens = seen.length;

    transport.step(runId, 301);
    await new Promise((r) => setTimeout(r, 20));
    // Applied (the store's own state moved on) but not told until the turn comes.
    expect(seen.length).toBe(beforeTokens);
    expect(turns.length).toBe(1);
    turns.shift()!();
    expect(seen.length).toBe(beforeTokens + 1);
    const shown = seen.at(-1)!.snapshot;
    expect(shown.run).toMatchObject({ id: runId, status: "RUNNING", lastSeq: 301 });
    expect(shown.messages.at(-1)!.content).toBe(streaming(300).messages[1]!.content);
    expect(afterSubmit).toBeGreaterThanOrEqual(2);
  });

  it("a read that brings nothing new tells nobody: only the connection's change is told, and everything else keeps its objects", async () => {
    const transport = createTestTransport();
    const conversationId = transport.addConversation({ title: "Quiet", messages: longThread(50) });
    const store = testClient(transport).conversation(conversationId);
    const ready = await settled(store, (s) => s.phase === "ready", "the thread read");
    const reads = () => transport.sent.filter((s) => s.name === "RunledgerConversation").length;
    const before = reads();
    const seen = told(store);
    // A dropped connection: the notices are subscribed again, and the conversation read again (notices sent meanwhile are lost).
    transport.drop();
    await settled(store, () => reads() > before, "the read after the drop");
    await new Promise((r) => setTimeout(r, 50));
    // The drop is news, about the connection only (the snapshot's `connection`): each notification told a new
    // connection state, and every other field is the same object as before the drop; the read after it told nothing.
    const connections = seen.map((s) => s.snapshot.connection);
    for (let i = 1; i < connections.length; i++) expect(connections[i]).not.toBe(connections[i - 1]);
    const now = store.getSnapshot();
    expect(now.connection).toBe(transport.connection.getSnapshot());
    expect(now.connection.reconnects).toBeGreaterThan(ready.connection.reconnects);
    if (seen.length > 0) expect(now).toBe(seen.at(-1)!.snapshot);
    for (const key of Object.keys(ready) as (keyof ConversationSnapshot)[]) if (key !== "connection") expect(now[key]).toBe(ready[key]);
  });
});
