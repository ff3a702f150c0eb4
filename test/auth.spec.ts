// API_TOKEN: every HTTP request (queries, mutations, SSE, export) and every
// WebSocket needs the token; health, readiness and the GraphiQL page stay open.
// CORS_ORIGINS: no cross-origin access by default, over HTTP or WebSocket.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp } from "../testkit/app.ts";
import { startServerProcess } from "../testkit/processes.ts";
import { snapshotDatabase } from "../testkit/db-snapshot.ts";
import { openRawSocket, operationResult, sseRequest, subscribe } from "../testkit/protocol.ts";
import { START_RUN } from "../testkit/documents.ts";
import { loadConfig } from "../src/config.ts";
import type { App } from "../src/app.ts";

const TOKEN = "s3cret-token-for-tests";
const BEARER = `Bearer ${TOKEN}`;

let fake: FakeOllama;
beforeAll(async () => {
  fake = await startFakeOllama();
});
afterAll(async () => {
  await fake?.close();
});

function post(app: App, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${app.url}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/graphql-response+json", ...headers },
    body: JSON.stringify(body),
  });
}

describe("with API_TOKEN set", () => {
  let app: App & { databaseFile: string };
  beforeAll(async () => {
    app = await startTestApp({ ollamaUrl: fake.url, env: { API_TOKEN: TOKEN } });
  });
  afterAll(async () => {
    await app?.close();
  });

  const wrong: [string, Record<string, string>][] = [
    ["no Authorization header", {}],
    ["a wrong token", { authorization: "Bearer not-the-token-at-all" }],
    ["the token with a suffix", { authorization: `${BEARER}x` }],
    ["the token without the Bearer scheme", { authorization: TOKEN }],
    ["another scheme", { authorization: `Basic ${Buffer.from(`u:${TOKEN}`).toString("base64")}` }],
    ["an empty header", { authorization: "" }],
  ];

  for (const [name, headers] of wrong) {
    it(`a query with ${name}: 401 with a Bearer challenge`, async () => {
      const response = await post(app, { query: "{ __typename }" }, headers);
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).toBe('Bearer realm="runledger"');
      // The message says why.
      expect(await response.json()).toEqual({
        errors: [{ message: expect.stringMatching(/credential|bearer|API_TOKEN/i), extensions: { code: "UNAUTHENTICATED" } }],
      });
    });
  }

  it("a mutation without the token is refused and writes nothing", async () => {
    const before = snapshotDatabase(app.databaseFile);
    const response = await post(app, { query: START_RUN, variables: { message: "let me in" } });
    expect(response.status).toBe(401);
    expect(snapshotDatabase(app.databaseFile)).toBe(before);
    expect(fake.requests).toHaveLength(0);
  });

  it("with the token, queries and mutations are served", async () => {
    expect(await (await post(app, { query: "{ __typename }" }, { authorization: BEARER })).json()).toEqual({ data: { __typename: "Query" } });
    const started = await (await post(app, { query: START_RUN, variables: { message: "hello" } }, { authorization: BEARER })).json();
    expect(started.data.startRun.__typename).toBe("StartRunSuccess");
  });

  for (const method of ["GET", "POST"] as const) {
    it(`SSE over ${method}: 401 without the token, a stream with it`, async () => {
      expect((await sseRequest(app.url, { query: "{ __typename }" }, { method })).status).toBe(401);
      const sse = await sseRequest(app.url, { query: "{ __typename }" }, { method, headers: { authorization: BEARER } });
      expect(sse.status).toBe(200);
      expect(sse.events[0]).toEqual({ event: "next", data: { data: { __typename: "Query" } } });
    });
  }

  it("GET queries need the token too", async () => {
    const response = await fetch(`${app.url}/graphql?query=${encodeURIComponent("{ __typename }")}`, { headers: { accept: "application/json" } });
    expect(response.status).toBe(401);
  });

  it("the export route needs the token, even when the client asks for HTML", async () => {
    const path = `${app.url}/api/conversations/00000000-0000-4000-8000-000000000000/export?format=jsonl`;
    expect((await fetch(path)).status).toBe(401);
    expect((await fetch(path, { headers: { accept: "text/html" } })).status).toBe(401);
    expect((await fetch(path, { headers: { authorization: BEARER } })).status).not.toBe(401);
  });

  it("the GraphiQL page is served without the token and executes nothing", async () => {
    const before = snapshotDatabase(app.databaseFile);
    const mutation = encodeURIComponent('mutation { startRun(input: { message: "sneaky" }) { __typename } }');
    for (const url of [`${app.url}/graphql`, `${app.url}/graphql?query=${mutation}`, `${app.url}/graphql?query=${encodeURIComponent("{ __typename }")}`]) {
      const response = await fetch(url, { headers: { accept: "text/html" } });
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toMatch(/^text\/html/);
      expect(await response.text()).not.toContain('"__typename":"Query"');
    }
    expect(snapshotDatabase(app.databaseFile)).toBe(before);
  });

  it("health and readiness stay open", async () => {
    expect((await fetch(`${app.url}/health`)).status).toBe(200);
    expect((await fetch(`${app.url}/ready`)).status).toBe(200);
  });

  const wrongInit: [string, Record<string, unknown> | boolean][] = [
    ["no payload", true],
    ["no authorization", { other: 1 }],
    ["a wrong token", { authorization: "Bearer nope-nope-nope" }],
    ["the token without the Bearer scheme", { authorization: TOKEN }],
    ["a non-string authorization", { authorization: 12345 }],
  ];

  for (const [name, payload] of wrongInit) {
    it(`a WebSocket whose connection_init has ${name}: closed with 4401`, async () => {
      const socket = await openRawSocket(app.url);
      socket.send({ type: "connection_init", ...(payload === true ? {} : { payload }) });
      expect(await socket.closed).toEqual({ code: 4401, reason: "Unauthorized" });
      expect(socket.messages).toEqual([]);
    });
  }

  it("a WebSocket with the token in connection_init is acknowledged and served; an HTTP header alone is not enough", async () => {
    const socket = await openRawSocket(app.url, { init: { authorization: BEARER } });
    socket.send(subscribe("1", "{ __typename }"));
    expect(await operationResult(socket, "1")).toEqual({ next: [{ data: { __typename: "Query" } }] });
    await socket.close();

    const headerOnly = await openRawSocket(app.url, { headers: { authorization: BEARER } });
    headerOnly.send({ type: "connection_init" });
    expect((await headerOnly.closed).code).toBe(4401);
  });
});

describe("without API_TOKEN", () => {
  it("the default HOST is loopback, and npm start listens there", async () => {
    expect(loadConfig({}).host).toBe("127.0.0.1");
    const server = await startServerProcess({ DATABASE_URL: `file:${(await import("../testkit/app.ts")).tempDatabaseUrl().file}`, OLLAMA_HOST: fake.url });
    try {
      expect(new URL(server.url).hostname).toBe("127.0.0.1");
    } finally {
      await server.stop();
    }
  });
});

describe("cross-origin access", () => {
  const FOREIGN = "https://evil.example";
  const QUERY = { query: "{ __typename }" };

  describe("by default: none", () => {
    let app: App & { databaseFile: string };
    beforeAll(async () => {
      app = await startTestApp({ ollamaUrl: fake.url });
    });
    afterAll(async () => {
      await app?.close();
    });

    it("a request from a foreign page is refused with 403 and writes nothing", async () => {
      const before = snapshotDatabase(app.databaseFile);
      const response = await post(app, { query: START_RUN, variables: { message: "from afar" } }, { origin: FOREIGN });
      expect(response.status).toBe(403);
      expect((await response.json()).errors[0].extensions.code).toBe("ORIGIN_NOT_ALLOWED");
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
      expect(snapshotDatabase(app.databaseFile)).toBe(before);
    });

    it("a preflight from a foreign page gets no CORS headers", async () => {
      const response = await fetch(`${app.url}/graphql`, { method: "OPTIONS", headers: { origin: FOREIGN, "access-control-request-method": "POST" } });
      expect(response.status).toBe(403);
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
    });

    it("a WebSocket from a foreign page is refused at the upgrade", async () => {
      const socket = await openRawSocket(app.url, { headers: { origin: FOREIGN } });
      expect(await socket.closed).toMatchObject({ code: null, httpStatus: 403 });
    });

    it("same-origin pages (GraphiQL) and clients without an Origin are served", async () => {
      const host = new URL(app.url).host;
      expect((await post(app, QUERY, { origin: `http://${host}` })).status).toBe(200);
      expect((await post(app, QUERY)).status).toBe(200);
      const socket = await openRawSocket(app.url, { headers: { origin: `http://${host}` }, init: true });
      socket.send(subscribe("1", "{ __typename }"));
      expect(await operationResult(socket, "1")).toEqual({ next: [{ data: { __typename: "Query" } }] });
      await socket.close();
    });

    it("a form POST, which needs no preflight, is refused with 415 and writes nothing", async () => {
      const before = snapshotDatabase(app.databaseFile);
      const form = new URLSearchParams({ query: 'mutation { startRun(input: { message: "csrf" }) { __typename } }' });
      const urlencoded = await fetch(`${app.url}/graphql`, { method: "POST", body: form });
      expect(urlencoded.status).toBe(415);
      const multipart = new FormData();
      multipart.set("operations", JSON.stringify({ query: 'mutation { startRun(input: { message: "csrf" }) { __typename } }' }));
      multipart.set("map", "{}");
      expect((await fetch(`${app.url}/graphql`, { method: "POST", body: multipart })).status).toBe(415);
      expect((await fetch(`${app.url}/graphql`, { method: "POST", headers: { "content-type": "text/plain" }, body: JSON.stringify(QUERY) })).status).toBe(415);
      expect(snapshotDatabase(app.databaseFile)).toBe(before);
    });
  });

  describe("with CORS_ORIGINS", () => {
    const ALLOWED = "https://app.example.com";
    let app: App;
    beforeAll(async () => {
      app = await startTestApp({ ollamaUrl: fake.url, env: { CORS_ORIGINS: `${ALLOWED}, http://localhost:5173` } });
    });
    afterAll(async () => {
      await app?.close();
    });

    it("answers a listed origin's preflight without the token and allows its headers", async () => {
      const response = await fetch(`${app.url}/graphql`, {
        method: "OPTIONS",
        headers: { origin: ALLOWED, "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type" },
      });
      expect(response.status).toBe(204);
      expect(response.headers.get("access-control-allow-origin")).toBe(ALLOWED);
      expect(response.headers.get("access-control-allow-methods")).toBe("GET, POST, OPTIONS");
      expect(response.headers.get("access-control-allow-headers")).toBe("authorization, content-type, accept, last-event-id, idempotency-key");
    });

    it("serves a listed origin with its CORS header, on GraphQL and on plain routes", async () => {
      const response = await post(app, QUERY, { origin: ALLOWED });
      expect(response.status).toBe(200);
      expect(response.headers.get("access-control-allow-origin")).toBe(ALLOWED);
      expect((await fetch(`${app.url}/health`, { headers: { origin: "http://localhost:5173" } })).headers.get("access-control-allow-origin")).toBe(
        "http://localhost:5173",
      );
    });

    it("still refuses an origin that is not listed, over HTTP and WebSocket", async () => {
      expect((await post(app, QUERY, { origin: FOREIGN })).status).toBe(403);
      const socket = await openRawSocket(app.url, { headers: { origin: FOREIGN } });
      expect((await socket.closed).httpStatus).toBe(403);
      const allowed = await openRawSocket(app.url, { headers: { origin: ALLOWED }, init: true });
      await allowed.close();
    });
  });

  it("CORS_ORIGINS must list origins", () => {
    expect(loadConfig({ CORS_ORIGINS: "https://a.example, *" }).corsOrigins).toEqual(["https://a.example", "*"]);
    expect(() => loadConfig({ CORS_ORIGINS: "https://a.example/path" })).toThrow(/CORS_ORIGINS must list origins/);
    expect(() => loadConfig({ CORS_ORIGINS: "a.example" })).toThrow(/CORS_ORIGINS must list origins/);
  });
});
