// @runledger/client's connection against a real server that asks for a
// credential (API_TOKEN, and HS256 JWTs checked again every 200 ms): the
// credential provider is asked on every connect and again after a 4401; a
// token that expires mid-run is replaced and the run's events stay exact;
// `unauthorized` until a good credential and reconnect(); Server-Sent Events
// as a transport of their own and as the fallback when a proxy refuses
// WebSocket upgrades; and a socket that goes silent is dropped by the
// keep-alive and made again.
import WebSocket from "ws";
import { SignJWT } from "jose";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp } from "../testkit/app.ts";
import { until } from "../testkit/streaming.ts";
import {
  createRunledgerClient,
  createWebSocketTransport,
  memoryStorage,
  type ConnectionStatus,
  type CredentialProvider,
  type RunledgerClient,
  type Transport,
} from "../packages/client/src/index.ts";
import { startProxy, type Proxy } from "./sdk/proxy.ts";
import { ended, expectExactly, numbered, ofRun, seenEvents, serverLog, serverThread, settled, storedMessages } from "./sdk/harness.ts";

const TOKEN = "sdk-connection-token";
const SECRET = "a shared secret of at least thirty-two bytes, for HS256";

let fake: FakeOllama;
let app: Awaited<ReturnType<typeof startTestApp>>;
let proxy: Proxy;
const clients: RunledgerClient[] = [];

beforeAll(async () => {
  fake = await startFakeOllama();
  app = await startTestApp({
    ollamaUrl: fake.url,
    env: { API_TOKEN: TOKEN, AUTH_JWT_SECRET: SECRET, AUTH_CLOCK_TOLERANCE_S: "0", CREDENTIAL_RECHECK_MS: "200" },
  });
  proxy = await startProxy(Number(new URL(app.url).port));
});

afterAll(async () => {
  await proxy?.close();
  await app?.close();
  await fake?.close();
});

afterEach(async () => {
  for (const client of clients.splice(0)) await client.dispose();
  proxy.block(false);
  proxy.refuseUpgrades(false);
});

function client(credentials: CredentialProvider, transport: "ws" | "sse" | "auto" | Transport = "ws"): RunledgerClient {
  const made = createRunledgerClient({ url: proxy.url, credentials, webSocketImpl: WebSocket, storage: memoryStorage(), transport });
  clients.push(made);
  return made;
}

function statuses(made: RunledgerClient): ConnectionStatus[] {
  const seen: ConnectionStatus[] = [made.connection.getSnapshot().status];
  made.connection.subscribe(() => seen.push(made.connection.getSnapshot().status));
  return seen;
}

/** An HS256 JWT for alice, valid for `seconds`. */
async function jwt(seconds: number): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: "HS256" })
    .setSubject("alice")
    .setIssuedAt(now)
    .setExpirationTime(now + seconds)
    .sign(new TextEncoder().encode(SECRET));
}

describe("credentials", () => {
  it("a refused credential (4401) asks the provider again, and a new one connects at once", async () => {
    const asked: string[] = [];
    const made = client(() => {
      const answer = asked.length === 0 ? "not-the-token" : TOKEN;
      asked.push(answer);
      return answer;
    });
    const seen = statuses(made);
    await until(() => made.connection.getSnapshot().status === "connected", "connected with the second credential");
    expect(asked.slice(0, 3)).toEqual(["not-the-token", TOKEN, TOKEN]);
    expect(seen).not.toContain("unauthorized");
    const store = made.conversation();
    const started = await store.submit("With the right token");
    if (!started.ok) throw new Error(started.error.message);
    await ended(store, started.value.runId, "COMPLETED");
  });

  it("the same refused credential again: unauthorized, until the provider has a good one and reconnect() is called", async () => {
    let credential = "still-not-the-token";
    let asked = 0;
    const made = client(() => {
      asked += 1;
      return credential;
    });
    await until(() => made.connection.getSnapshot().status === "unauthorized", "unauthorized");
    const askedWhenRefused = asked;
    await new Promise((resolve) => setTimeout(resolve, 500));
    // It does not keep knocking with a credential that was refused.
    expect(asked).toBe(askedWhenRefused);
    expect(made.connection.getSnapshot().status).toBe("unauthorized");
    const store = made.conversation();
    const refused = await store.submit("Not allowed");
    expect(refused).toMatchObject({ ok: false, error: { code: "UNAUTHORIZED" } });

    credential = TOKEN;
    made.reconnect();
    await until(() => made.connection.getSnapshot().status === "connected", "connected after reconnect()");
    const retried = await store.retry(store.getSnapshot().messages.find((m) => m.state === "unsent")!.id);
    if (!retried.ok) throw new Error(retried.error.message);
    await ended(store, retried.value.runId, "COMPLETED");
  });

  it("a token that expires mid-run closes the socket (4401); the provider's fresh one reconnects and the run's events stay exact", async () => {
    const issued: string[] = [];
    const made = client(async () => {
      const token = await jwt(2);
      issued.push(token);
      return token;
    });
    const seen = statuses(made);
    fake.enqueue({ kind: "trickle", tokens: numbered(150), delayMs: 30 });
    const store = made.conversation();
    const events = seenEvents(store);
    const started = await store.submit("Outlive my token");
    if (!started.ok) throw new Error(started.error.message);
    const done = await ended(store, started.value.runId, "COMPLETED", 30_000);
    // The run took longer than a token lives: the socket was refused and made again with a new one.
    expect(made.connection.getSnapshot().reconnects).toBeGreaterThanOrEqual(1);
    expect(seen.filter((s) => s === "connected").length).toBeGreaterThanOrEqual(2);
    expect(new Set(issued).size).toBeGreaterThanOrEqual(3);
    expectExactly(ofRun(events, started.value.runId), await serverLog(app.url, started.value.runId, TOKEN));
    expect(done.messages.at(-1)!.content).toBe(numbered(150).join(""));
    // Alice's conversation, read back by the admin (API_TOKEN).
    expect(storedMessages(done)).toEqual((await serverThread(app.url, started.value.conversationId, TOKEN)).messages);
  }, 45_000);
});

describe("transports", () => {
  it("Server-Sent Events: a run streams exactly, and a dropped stream rejoins after its last seq", async () => {
    fake.enqueue({ kind: "trickle", tokens: numbered(50), delayMs: 20 });
    const made = client(() => TOKEN, "sse");
    const store = made.conversation();
    const events = seenEvents(store);
    const started = await store.submit("Over SSE");
    if (!started.ok) throw new Error(started.error.message);
    await settled(store, (s) => (s.run?.lastSeq ?? 0) >= 10, "ten events over SSE");
    proxy.dropAll();
    const done = await ended(store, started.value.runId, "COMPLETED");
    expect(made.connection.getSnapshot()).toMatchObject({ transport: "sse", status: "connected" });
    expectExactly(ofRun(events, started.value.runId), await serverLog(app.url, started.value.runId, TOKEN));
    expect(done.messages.at(-1)!.content).toBe(numbered(50).join(""));
  });

  it("auto: when a proxy refuses WebSocket upgrades and HTTP works, it falls back to Server-Sent Events", async () => {
    proxy.refuseUpgrades(true);
    const made = client(() => TOKEN, "auto");
    await until(() => made.connection.getSnapshot().transport === "sse", "the fallback to SSE", 20_000);
    const store = made.conversation();
    const events = seenEvents(store);
    const started = await store.submit("Through a proxy without WebSockets");
    if (!started.ok) throw new Error(started.error.message);
    await ended(store, started.value.runId, "COMPLETED");
    expect(made.connection.getSnapshot().status).toBe("connected");
    expectExactly(ofRun(events, started.value.runId), await serverLog(app.url, started.value.runId, TOKEN));
  });

  it("keep-alive: a socket that goes silent without closing is dropped when a ping gets no pong, and made again", async () => {
    const transport = createWebSocketTransport({ url: proxy.url, credentials: () => TOKEN, webSocketImpl: WebSocket, keepAliveMs: 200, pongTimeoutMs: 300 });
    const made = client(() => TOKEN, transport);
    await until(() => made.connection.getSnapshot().status === "connected", "connected");
    fake.enqueue({ kind: "trickle", tokens: numbered(60), delayMs: 25 });
    const store = made.conversation();
    const events = seenEvents(store);
    const started = await store.submit("Through a silent network");
    if (!started.ok) throw new Error(started.error.message);
    await settled(store, (s) => (s.run?.lastSeq ?? 0) >= 8, "eight events");
    const connectionsBefore = proxy.connections();
    proxy.freeze();
    await until(() => made.connection.getSnapshot().reconnects >= 1, "a new socket after the silent one");
    expect(proxy.connections()).toBeGreaterThan(connectionsBefore);
    await ended(store, started.value.runId, "COMPLETED");
    expectExactly(ofRun(events, started.value.runId), await serverLog(app.url, started.value.runId, TOKEN));
  });
});
