// WebSocket operations alike (same document and variables) share one stream and
// one serialization (src/server/ws-broadcast.ts), and each still gets exactly
// what it would have had on its own: the whole run from seq 1 for a late
// runEvents subscriber, only what follows for a live one, its own `complete`,
// the same refusal, and a cut-off that touches no one else.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp } from "../testkit/app.ts";
import { collect, startRun, wsClient } from "../testkit/graphql.ts";
import { CONVERSATION_EVENTS, RUN_EVENTS } from "../testkit/documents.ts";
import { rawWs, until, type RawWs } from "../testkit/streaming.ts";
import type { App } from "../src/app.ts";

let fake: FakeOllama;
let app: App;

beforeAll(async () => {
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url, env: { SUBSCRIBER_QUEUE_LIMIT: "20", WS_KEEPALIVE_MS: "120000" } });
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const payloads = (socket: RawWs, id: string) =>
  socket
    .of(id)
    .filter((m) => m.type === "next")
    .map((m) => m.payload);
const completed = (socket: RawWs, id: string) => socket.of(id).some((m) => m.type === "complete");
const stats = () => app.http.webSocketStats();

describe("alike WebSocket operations", () => {
  it("share one stream: every socket gets the whole run in order, also one that joins halfway", async () => {
    fake.enqueue({ kind: "trickle", tokens: range(30).map((i) => `t${i} `), delayMs: 30 });
    const { runId } = await startRun(app.url, "share this");
    const early = await Promise.all(range(8).map(() => rawWs(app.url)));
    early.forEach((s) => s.subscribe("op", RUN_EVENTS, { runId }));
    await until(() => stats().broadcast.members === 8, "eight members");
    expect(stats().broadcast.groups).toBe(1);
    expect(app.services.bus.stats().runSubscribers).toBe(1);

    // Halfway: a late socket and one that asks from seq 5 on (another operation, another group).
    await until(() => payloads(early[0]!, "op").filter((p) => p.data.runEvents.__typename === "TokenEvent").length >= 10, "ten tokens");
    const late = await rawWs(app.url);
    late.subscribe("late", RUN_EVENTS, { runId });
    late.subscribe("after", RUN_EVENTS, { runId, after: 5 });

    await until(
      () => [...early.map((s) => completed(s, "op")), completed(late, "late"), completed(late, "after")].every(Boolean),
      "every operation to complete",
    );
    const whole = payloads(early[0]!, "op").map((p) => p.data.runEvents);
    expect(whole.map((e) => e.seq)).toEqual(range(whole.length).map((i) => i + 1));
    expect(
      whole
        .filter((e) => e.__typename === "TokenEvent")
        .map((e) => e.text)
        .join(""),
    ).toBe(
      range(30)
        .map((i) => `t${i} `)
        .join(""),
    );
    expect(whole.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "COMPLETED" });
    for (const socket of early) expect(payloads(socket, "op").map((p) => p.data.runEvents)).toEqual(whole);
    expect(payloads(late, "late").map((p) => p.data.runEvents)).toEqual(whole);
    expect(payloads(late, "after").map((p) => p.data.runEvents)).toEqual(whole.slice(5));
    await until(() => stats().broadcast.groups === 0 && app.services.bus.stats().runSubscribers === 0, "the groups to end");
    for (const socket of [...early, late]) socket.socket.close();
  });

  it("start a live operation where it joins, and let one member complete without ending the others", async () => {
    const { conversationId } = await startRun(app.url, "make the conversation");
    const watcher = await rawWs(app.url);
    watcher.subscribe("watch", CONVERSATION_EVENTS, { conversationId });
    watcher.subscribe("quit", CONVERSATION_EVENTS, { conversationId });
    await until(() => stats().broadcast.members === 2, "two members");
    await until(async () => (await app.services.store.activeRun(conversationId)) === null, "the first run to end");
    fake.enqueue({ kind: "trickle", tokens: range(6).map((i) => `a${i} `), delayMs: 20 });
    const { runId } = await startRun(app.url, "first watched run", conversationId);
    const firstEnd = (p: any) => p.data.conversationEvents.runId === runId && p.data.conversationEvents.status === "COMPLETED";
    await until(() => payloads(watcher, "watch").some(firstEnd) && payloads(watcher, "quit").some(firstEnd), "the first watched run's end on both");
    expect(payloads(watcher, "quit")).toEqual(payloads(watcher, "watch"));
    watcher.socket.send(JSON.stringify({ id: "quit", type: "complete" }));
    await until(() => stats().broadcast.members === 1, "one member left");
    const quitCount = watcher.of("quit").length;

    // A live operation that joins now sees the second run only.
    const newcomer = await rawWs(app.url);
    newcomer.subscribe("watch", CONVERSATION_EVENTS, { conversationId });
    await until(() => stats().broadcast.members === 2, "the newcomer");
    fake.enqueue({ kind: "trickle", tokens: ["b0 ", "b1 "], delayMs: 20 });
    const second = (await startRun(app.url, "second run", conversationId)).runId;
    const secondEnd = (m: any) => m.data.conversationEvents.runId === second && m.data.conversationEvents.status === "COMPLETED";
    await until(() => payloads(newcomer, "watch").some(secondEnd) && payloads(watcher, "watch").some(secondEnd), "the second run's end on both");
    const seen = payloads(newcomer, "watch").map((p) => p.data.conversationEvents);
    expect(new Set(seen.map((e) => e.runId))).toEqual(new Set([second]));
    expect(seen[0]).toMatchObject({ __typename: "RunStatusEvent", status: "RUNNING", seq: 1 });
    expect(
      payloads(watcher, "watch")
        .map((p) => p.data.conversationEvents)
        .filter((e) => e.runId === second),
    ).toEqual(seen);
    // The completed member got nothing more, and no `complete` it did not ask for.
    expect(watcher.of("quit").length).toBe(quitCount);
    expect(completed(watcher, "quit")).toBe(false);
    watcher.socket.close();
    newcomer.socket.close();
    await until(() => stats().broadcast.groups === 0, "the group to end with its last member");
  });

  it("give each socket the same refusal when the stream cannot start", async () => {
    const sockets = await Promise.all(range(3).map(() => rawWs(app.url)));
    const missing = "00000000-0000-4000-8000-000000000000";
    sockets.forEach((s) => s.subscribe("gone", RUN_EVENTS, { runId: missing }));
    await until(() => sockets.every((s) => completed(s, "gone")), "each refusal");
    for (const socket of sockets) {
      expect(payloads(socket, "gone")).toEqual([
        { errors: [{ message: `Run "${missing}" does not exist`, locations: expect.any(Array), path: ["runEvents"], extensions: { code: "NOT_FOUND" } }] },
      ]);
      socket.socket.close();
    }
    expect(stats().broadcast).toEqual({ groups: 0, members: 0 });
  });

  it("cut off only the member that stops reading; the group and the run go on", async () => {
    const tokens = range(300).map((i) => `${String(i).padStart(4, "0")}${"x".repeat(20_000)}`);
    // A millisecond apart, as a fast model sends them: the stalled member falls 20 behind within
    // the first 20 ms, while the reading one, in this same busy process, is never asked to keep up
    // with 6 MB arriving at once.
    fake.enqueue({ kind: "text", tokens, firstDelayMs: 300, delayMs: 1 });
    const { runId } = await startRun(app.url, "flood");
    const stalled = await rawWs(app.url);
    stalled.subscribe("1", RUN_EVENTS, { runId });
    stalled.socket.pause();
    const client = wsClient(app.url);
    const reader = await collect(client, RUN_EVENTS, { runId }).done;
    expect(reader.at(-1).runEvents).toMatchObject({ status: "COMPLETED" });
    expect(reader.filter((r) => r.runEvents.__typename === "TokenEvent").map((r) => r.runEvents.text)).toEqual(tokens);
    stalled.socket.resume();
    await until(() => completed(stalled, "1"), "the stalled member's complete");
    const cut = payloads(stalled, "1");
    expect(cut.at(-1)).toMatchObject({ data: null, errors: [{ extensions: { code: "SUBSCRIBER_TOO_SLOW" } }] });
    expect(cut.slice(0, -1).map((p) => p.data)).toEqual(reader.slice(0, cut.length - 1));
    stalled.socket.close();
    await client.dispose();
  });
});
