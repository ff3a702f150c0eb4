// Keep-alive on both transports, and no leaked bus listeners after many
// subscribe/unsubscribe cycles or after clients that vanish. Also checks that
// GraphiQL is served with WebSocket subscriptions and its default document.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp } from "../testkit/app.ts";
import { collect, gqlOk } from "../testkit/graphql.ts";
import { range, rawSse, rawWs, TRANSPORTS, until } from "../testkit/streaming.ts";
import { CONVERSATION_EVENTS, CONVERSATIONS_CHANGED_ROW, RUN_EVENTS, START_RUN } from "../testkit/documents.ts";
import { GRAPHIQL_DEFAULT_DOCUMENT } from "../src/server/graphiql.ts";
import type { App } from "../src/app.ts";

// Short enough to see pings quickly, long enough that a client in this same busy
// process always answers in time.
const KEEPALIVE_MS = 1_000;

let fake: FakeOllama;
let app: App;
let runId: string;
let conversationId: string;

beforeAll(async () => {
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url, env: { WS_KEEPALIVE_MS: String(KEEPALIVE_MS) } });
  // A run that stays running (the model sends headers, then nothing) until the app closes.
  fake.enqueue({ kind: "silence" });
  const { startRun } = await gqlOk(app.url, START_RUN, { message: "stay open" });
  runId = startRun.run.id;
  conversationId = startRun.conversation.id;
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

const stats = () => app.services.bus.stats();
const listeners = () => {
  const s = stats();
  return s.runSubscribers + s.conversationSubscribers + s.changeSubscribers;
};

describe("keep-alive", () => {
  it("pings WebSocket clients every WS_KEEPALIVE_MS and keeps a client that answers", async () => {
    const client = await rawWs(app.url);
    let pings = 0;
    client.socket.on("ping", () => (pings += 1));
    await until(() => pings >= 2, "two pings");
    expect(client.socket.readyState).toBe(client.socket.OPEN);
    client.socket.close();
  });

  it("drops a WebSocket client that stops answering pings, and its subscriptions with it", async () => {
    await until(() => listeners() === 0, "no listeners left from before");
    const client = await rawWs(app.url);
    client.subscribe("1", CONVERSATIONS_CHANGED_ROW);
    client.subscribe("2", RUN_EVENTS, { runId });
    await until(() => stats().changeSubscribers === 1 && stats().runSubscribers === 1, "both subscriptions");
    // A paused socket reads nothing, so it answers no ping: to the server it has vanished.
    client.socket.pause();
    await until(() => listeners() === 0, "the server to drop the silent client", 10 * KEEPALIVE_MS + 5_000);
    client.socket.terminate();
  });

  it("sends SSE keep-alive comments on an idle stream", async () => {
    // graphql-yoga pings every 12 s, every 300 ms when NODE_ENV is test (as under vitest).
    expect(process.env.NODE_ENV).toBe("test");
    const sse = rawSse(app.url, CONVERSATIONS_CHANGED_ROW);
    await until(() => sse.comments >= 3, "three keep-alive comments");
    expect(sse.events).toEqual([]);
    sse.request.destroy();
  });
});

describe("cleanup", () => {
  describe.each(TRANSPORTS)("over $name", ({ client: connect }) => {
    it("returns to zero bus listeners after many subscribe/unsubscribe cycles", async () => {
      await until(() => listeners() === 0, "no listeners left from before");
      const client = connect(app.url);
      for (const cycle of range(20)) {
        const subs = [
          collect(client, RUN_EVENTS, { runId }),
          collect(client, CONVERSATION_EVENTS, { conversationId }),
          collect(client, CONVERSATIONS_CHANGED_ROW),
        ];
        await until(
          () => stats().runSubscribers === 1 && stats().conversationSubscribers === 1 && stats().changeSubscribers === 1,
          `cycle ${cycle}'s subscriptions`,
        );
        for (const sub of subs) sub.dispose();
        await until(() => listeners() === 0, `cycle ${cycle}'s release`);
      }
      await client.dispose();
      expect(stats()).toMatchObject({ runSubscribers: 0, conversationSubscribers: 0, changeSubscribers: 0 });
    });
  });

  it("releases the listeners of clients that vanish without unsubscribing", async () => {
    await until(() => listeners() === 0, "no listeners left from before");
    const sockets = await Promise.all(range(10).map(() => rawWs(app.url)));
    sockets.forEach((s, i) => s.subscribe(String(i), RUN_EVENTS, { runId }));
    const streams = range(10).map(() => rawSse(app.url, CONVERSATION_EVENTS, { conversationId }));
    // The ten WebSocket operations are alike: one broadcast group, one bus listener, ten members.
    await until(
      () => stats().runSubscribers === 1 && app.http.webSocketStats().broadcast.members === 10 && stats().conversationSubscribers === 10,
      "twenty subscriptions",
    );
    for (const socket of sockets) socket.socket.terminate();
    for (const stream of streams) stream.request.destroy();
    await until(() => listeners() === 0, "every listener to be released");
    expect(app.http.webSocketStats()).toEqual({ connections: 0, operations: 0, broadcast: { groups: 0, members: 0 } });
  });
});

describe("GraphiQL", () => {
  it("is served at /graphql with WebSocket subscriptions and the start → follow → inspect document", async () => {
    const response = await fetch(`${app.url}/graphql`, { headers: { accept: "text/html" } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/text\/html/);
    const html = await response.text();
    expect(html).toContain("<title>runledger</title>");
    expect(html).toContain('"subscriptionsProtocol":"WS"');
    expect(html).toContain(JSON.stringify(GRAPHIQL_DEFAULT_DOCUMENT));
    for (const operation of ["mutation StartRun", "subscription FollowRun", "query Inspect"]) expect(GRAPHIQL_DEFAULT_DOCUMENT).toContain(operation);
    // Its scripts and styles are in the page: no CDN is needed to open it.
    expect(html).not.toMatch(/<(script|link)[^>]+(src|href)="https?:/);
    expect(html).not.toContain("unpkg.com");
  });
});
