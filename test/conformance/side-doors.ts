// The side doors, tried as an attacker would, on every deployment with two
// instances sharing the database (and Redis where the deployment has it):
// - request targets that look open but resolve to a route that is not;
// - idempotency replays by a principal that has lost access since the first call;
// - a revoked API key and an expired JWT on every live transport (graphql-ws,
//   GraphQL over SSE, the lab's chat stream), revoked through the other instance;
// - a JWT valid for longer than a timer can wait; reserved principal ids;
// - the per-principal cap on live streams.
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import http from "node:http";
import pg from "pg";
import WebSocket from "ws";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../../testkit/fake-ollama.ts";
import { startTestApp, tempDatabaseUrl } from "../../testkit/app.ts";
import { collect, gql, sseClient } from "../../testkit/graphql.ts";
import { CONVERSATION_EVENTS, RUN_EVENTS } from "../../testkit/documents.ts";
import { snapshotDatabase } from "../../testkit/db-snapshot.ts";
import { sleep, until } from "../../testkit/streaming.ts";
import { createApiKey } from "../../src/server/identity/api-keys.ts";
import type { App } from "../../src/app.ts";
import type { Deployment } from "./api.ts";

const ADMIN_TOKEN = "side-doors-admin-token";
const JWT_SECRET = "side-doors-shared-secret-of-32-bytes-or-more";
const ISSUER = "https://id.side-doors.test/";
const AUDIENCE = "side-doors-api";
const RECHECK_MS = 300;
const STREAM_CAP = 4;

type TestApp = App & { databaseFile: string };

/** One HTTP/1.1 request written by hand, so the target reaches the server exactly as written (fetch would normalise it). */
async function rawRequest(
  url: string,
  target: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  const body = options.body ?? "";
  const headers = {
    host: `${hostname}:${port}`,
    connection: "close",
    ...(body ? { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) } : {}),
    ...options.headers,
  };
  socket.write(
    `${options.method ?? "GET"} ${target} HTTP/1.1\r\n${Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join("")}\r\n${body}`,
  );
  const chunks: Buffer[] = [];
  socket.on("data", (chunk) => chunks.push(chunk));
  await new Promise<void>((resolve, reject) => {
    socket.once("end", resolve);
    socket.once("close", () => resolve());
    socket.once("error", reject);
  });
  const text = Buffer.concat(chunks).toString("utf8");
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
  let payload = text.slice(text.indexOf("\r\n\r\n") + 4);
  // A chunked body: the chunks' text, without their sizes.
  if (/^transfer-encoding: chunked/im.test(text.slice(0, text.indexOf("\r\n\r\n")))) payload = payload.replace(/(^|\r\n)[0-9a-f]+\r\n/gi, "");
  return { status, body: payload };
}

/** A graphql-ws socket authenticated with a bearer credential; records every message and its close. */
async function openSocket(url: string, credential: string) {
  const socket = new WebSocket(url.replace(/^http/, "ws") + "/graphql", "graphql-transport-ws");
  const messages: any[] = [];
  socket.on("message", (data) => messages.push(JSON.parse(String(data))));
  socket.on("error", () => {});
  const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.once("close", (code, reason) => resolve({ code, reason: String(reason) })));
  await new Promise((resolve, reject) => {
    socket.once("open", resolve);
    socket.once("error", reject);
  });
  socket.send(JSON.stringify({ type: "connection_init", payload: { authorization: `Bearer ${credential}` } }));
  await Promise.race([until(() => messages.some((m) => m.type === "connection_ack"), "connection_ack"), closed]);
  let next = 0;
  return {
    socket,
    messages,
    closed,
    acked: messages.some((m) => m.type === "connection_ack"),
    /** Sends an operation; answers its id. */
    send(query: string, variables?: Record<string, unknown>): string {
      const id = String(++next);
      socket.send(JSON.stringify({ id, type: "subscribe", payload: { query, variables } }));
      return id;
    },
    of(id: string) {
      return messages.filter((m) => m.id === id);
    },
  };
}

/** The lab's chat stream of a conversation (GET /api/chat), read until the server ends it. */
function chatStream(url: string, conversationId: string, credential: string): { status: Promise<number>; ended: Promise<void> } {
  const request = http.get(`${url}/api/chat?conversation=${conversationId}`, { headers: { authorization: `Bearer ${credential}` } });
  request.on("error", () => {});
  const response = new Promise<http.IncomingMessage>((resolve) => request.once("response", resolve));
  return {
    status: response.then((res) => res.statusCode ?? 0),
    ended: response.then(
      (res) =>
        new Promise<void>((resolve) => {
          res.resume();
          res.once("end", () => resolve());
          res.once("close", () => resolve());
          res.once("error", () => resolve());
        }),
    ),
  };
}

/** Every table but the ones that record processes and credentials, as JSON: equal dumps, nothing written. */
async function snapshot(databaseUrl: string | undefined, file: string): Promise<string> {
  if (!databaseUrl?.startsWith("postgres")) {
    const dump = JSON.parse(snapshotDatabase(file)) as Record<string, unknown>;
    delete dump.api_keys;
    return JSON.stringify(dump);
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows: tables } = await client.query<{ name: string }>(
      `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_name NOT IN ('run_owners', 'api_keys') ORDER BY 1`,
    );
    const dump: Record<string, unknown[]> = {};
    for (const { name } of tables) dump[name] = (await client.query(`SELECT * FROM "${name}" ORDER BY 1`)).rows;
    return JSON.stringify(dump);
  } finally {
    await client.end();
  }
}

const START = /* GraphQL */ `
  mutation Start($message: String!, $conversationId: ID, $key: String) {
    startRun(input: { message: $message, conversationId: $conversationId, idempotencyKey: $key }) {
      __typename
      ... on StartRunSuccess { run { id } conversation { id owner } }
      ... on Error { code message }
    }
  }
`;
const RUN_STATUS = /* GraphQL */ `query($r: ID!) { run(id: $r) { status } }`;
const HEAD = /* GraphQL */ `query($c: ID!) { conversation(id: $c) { checkpoints(first: 1) { edges { node { id } } } } }`;
const RUN_COUNT = /* GraphQL */ `{ conversations(first: 100) { edges { node { runs(first: 100) { totalCount } } } } }`;

/** The mutations a replay may answer, each with the key it is sent with and the id that names what it acts on. */
type Ids = { conversation: string; checkpoint: string; run: string };
const REPLAYED: { name: string; names: keyof Ids; query: string; variables: (ids: Ids, key: string) => Record<string, unknown> }[] = [
  {
    name: "startRun",
    names: "conversation",
    query: START,
    variables: (ids, key) => ({ message: "On your conversation.", conversationId: ids.conversation, key }),
  },
  {
    name: "resumeRun",
    names: "conversation",
    query: `mutation($c: ID!, $key: String) { resumeRun(input: { conversationId: $c, idempotencyKey: $key }) { __typename ... on ResumeRunSuccess { run { id } } ... on Error { code message } } }`,
    variables: (ids, key) => ({ c: ids.conversation, key }),
  },
  {
    name: "forkConversation",
    names: "checkpoint",
    query: `mutation($k: ID!, $key: String) { forkConversation(input: { checkpointId: $k, idempotencyKey: $key }) { __typename ... on ForkConversationSuccess { conversation { id } } ... on Error { code message } } }`,
    variables: (ids, key) => ({ k: ids.checkpoint, key }),
  },
  {
    name: "editState",
    names: "checkpoint",
    query: `mutation($k: ID!, $key: String) { editState(input: { checkpointId: $k, values: { messages: [{ role: "USER", content: "Edited." }] }, asNode: "__start__", idempotencyKey: $key }) {
      __typename ... on EditStateSuccess { run { id } } ... on Error { code message } } }`,
    variables: (ids, key) => ({ k: ids.checkpoint, key }),
  },
  {
    name: "cancelRun",
    names: "run",
    query: `mutation($r: ID!, $key: String) { cancelRun(input: { runId: $r, idempotencyKey: $key }) { __typename ... on CancelRunSuccess { run { id } } ... on Error { code message } } }`,
    variables: (ids, key) => ({ r: ids.run, key }),
  },
];

export function describeSideDoorConformance(deployment: Deployment) {
  describe(`no side doors, on ${deployment.name} with two instances`, () => {
    let fake: FakeOllama;
    let first: TestApp;
    let second: TestApp;
    let env: Record<string, string>;
    let cleanup: () => Promise<void> = async () => {};
    const keys: Record<string, string> = {};
    const keyIds: Record<string, string> = {};

    const sign = (claims: Record<string, unknown>) =>
      new SignJWT(claims).setProtectedHeader({ alg: "HS256" }).setIssuer(ISSUER).setAudience(AUDIENCE).sign(new TextEncoder().encode(JWT_SECRET));
    const bearer = (credential: string) => ({ authorization: `Bearer ${credential}` });
    const as = (app: TestApp, credential: string, query: string, variables?: Record<string, unknown>) => gql(app.url, query, variables, bearer(credential));
    const makeKey = async (who: string, role: "user" | "admin") => {
      const made = await createApiKey(first.storage.apiKeys, { userId: who, role, label: null });
      keys[who] = made.key;
      keyIds[who] = made.record.id;
      return made.key;
    };
    const ended = async (app: TestApp, credential: string, runId: string) =>
      !["QUEUED", "RUNNING"].includes((await as(app, credential, RUN_STATUS, { r: runId })).data?.run?.status);
    /** A run the model holds open (it streams a token, then nothing) until it is cancelled. */
    const holdOpen = async (credential: string) => {
      const before = fake.asked("Hold on.");
      fake.enqueue({ kind: "silence", tokens: ["Held "] });
      const started = (await as(first, credential, START, { message: "Hold on." })).data.startRun;
      expect(started.__typename).toBe("StartRunSuccess");
      await until(async () => (await as(first, credential, RUN_STATUS, { r: started.run.id })).data.run.status === "RUNNING", "the held run to run");
      // A run is RUNNING before it asks the model: until its request has taken the silence,
      // the next run's request could take it instead (and hang) while this one ends.
      await until(() => fake.asked("Hold on.") > before, "the held run's model request");
      return { conversation: started.conversation.id as string, run: started.run.id as string };
    };

    beforeAll(async () => {
      fake = await startFakeOllama();
      const selected = await deployment.env();
      cleanup = selected.cleanup;
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-side-doors-"));
      const agents = path.join(dir, "agents.json");
      fs.writeFileSync(agents, JSON.stringify({ agents: { default: { type: "chat" } } }));
      env = {
        API_TOKEN: ADMIN_TOKEN,
        AUTH_JWT_SECRET: JWT_SECRET,
        AUTH_ISSUER: ISSUER,
        AUTH_AUDIENCE: AUDIENCE,
        CREDENTIAL_RECHECK_MS: String(RECHECK_MS),
        QUOTA_STREAMS: String(STREAM_CAP),
        RUNLEDGER_CONFIG: agents,
        MODEL_IDLE_TIMEOUT_MS: "600000",
        // Both instances live in this process, so each would take the other's runs for those of a
        // previous incarnation of itself (the same pid) on its heartbeat's sweep: none during the suite.
        RUN_HEARTBEAT_MS: "600000",
        RUN_LEASE_MS: "1800000",
        ...selected.env,
      };
      // Both instances on one database: SQLite's file, or the deployment's PostgreSQL.
      const databaseUrl = env.DATABASE_URL ?? tempDatabaseUrl("runledger-side-doors-").url;
      first = await startTestApp({ ollamaUrl: fake.url, databaseUrl, env });
      second = await startTestApp({ ollamaUrl: fake.url, databaseUrl, env });
      await makeKey("alice", "user");
    }, 60_000);
    afterAll(async () => {
      await second?.close();
      await first?.close();
      await cleanup();
      await fake?.close();
    });

    it("decides on the path the router reads: every variant that resolves elsewhere is refused, open routes stay open", async () => {
      const query = encodeURIComponent("{ me { id role } agents { name } }");
      const { host } = new URL(first.url);
      const resolvesElsewhere = [
        "/console/../graphql",
        "/console/%2e%2e/graphql",
        "/console/%2E%2E/graphql",
        "/console/.%2e/graphql",
        "/console/..%2fgraphql",
        "/console/..%2Fgraphql",
        "/console/..\\graphql",
        "/console/%5c..%5cgraphql",
        "/console//../graphql",
        "/console/./../graphql",
        "/health/../graphql",
        "/ready/%2e%2e/graphql",
        "/./graphql",
        "//graphql",
        "/graphql/.",
        "/Console/../graphql",
        "/console/%2e%2e/api/conversations",
        "/console/..%00/graphql",
        "*",
        "http://[::1/graphql",
      ];
      for (const target of resolvesElsewhere) {
        for (const request of [
          { method: "GET", target: `${target}?query=${query}`, headers: { accept: "application/json" } },
          { method: "POST", target, body: JSON.stringify({ query: "{ me { id role } agents { name } }" }) },
          {
            method: "GET",
            target: `${target}?query=${encodeURIComponent("subscription { conversationsChanged { id } }")}`,
            headers: { accept: "text/event-stream" },
          },
        ]) {
          const answer = await rawRequest(first.url, request.target, request);
          expect(answer.status, `${request.method} ${request.target}`).toBe(400);
          expect(JSON.parse(answer.body), `${request.method} ${request.target}`).toMatchObject({ errors: [{ extensions: { code: "INVALID_PATH" } }] });
        }
      }
      // Forms that name a route other than the open ones need the credential like that route: never an answer without one.
      for (const target of ["/graphql/", "/GRAPHQL", "/Graphql", "/health/", "/HEALTH", "/ready/", "/metrics", "/api/conversations", "/graphql;x"]) {
        const answer = await rawRequest(first.url, `${target}?query=${query}`, { headers: { accept: "application/json" } });
        expect([401, 404], `GET ${target}`).toContain(answer.status);
        expect(answer.body, `GET ${target}`).not.toMatch(/"me"|"agents"/);
      }
      // An absolute-form target is read as its path: the same decision, no stack trace.
      const absolute = await rawRequest(first.url, `http://${host}/console/../graphql?query=${query}`, { headers: { accept: "application/json" } });
      expect(absolute.status).toBe(401);
      expect(absolute.body).not.toMatch(/"me"|TypeError|    at /);
      const metrics = await rawRequest(first.url, `http://${host}/metrics`, { headers: bearer(ADMIN_TOKEN) });
      expect(metrics.status).toBe(200);
      expect(metrics.body).toMatch(/^# HELP /m);
      const graphql = await rawRequest(first.url, `HTTP://${host}/graphql?query=${query}`, { headers: { accept: "application/json", ...bearer(ADMIN_TOKEN) } });
      expect(JSON.parse(graphql.body)).toMatchObject({ data: { me: { id: "admin", role: "ADMIN" } } });
      // The open routes answer as before, without a credential, and execute nothing.
      expect((await rawRequest(first.url, "/health")).status).toBe(200);
      expect([200, 503]).toContain((await rawRequest(first.url, "/ready")).status);
      expect((await rawRequest(first.url, "/console")).status).toBe(200);
      const page = await rawRequest(first.url, `/graphql?query=${query}`, { headers: { accept: "text/html" } });
      expect(page.status).toBe(200);
      expect(page.body).not.toMatch(/"me":\{/);
    });

    it("answers a replay of what the caller can no longer see exactly as a missing id, on either instance, and writes nothing", async () => {
      // Carol holds an admin key and acts on Alice's conversation, each call with a key.
      await makeKey("carol", "admin");
      fake.enqueue({ kind: "dropMidStream", tokens: ["Half "] });
      const failed = (await as(first, keys.alice!, START, { message: "Fail, please." })).data.startRun;
      await until(() => ended(first, keys.alice!, failed.run.id), "Alice's run to fail");
      const conversation = failed.conversation.id as string;
      const checkpoint = (await as(first, keys.alice!, HEAD, { c: conversation })).data.conversation.checkpoints.edges[0].node.id as string;
      const held = await holdOpen(keys.alice!);
      const ids = { conversation, checkpoint, run: held.run };

      const firstAnswers: Record<string, any> = {};
      // Resumed first (the conversation is resumable after the failure), then the rest, each once finished.
      for (const mutation of [REPLAYED[1]!, REPLAYED[2]!, REPLAYED[3]!, REPLAYED[0]!, REPLAYED[4]!]) {
        const answer = Object.values((await as(first, keys.carol!, mutation.query, mutation.variables(ids, `k-${mutation.name}`))).data)[0] as any;
        expect(answer.__typename, `${mutation.name}: ${JSON.stringify(answer)}`).toMatch(/Success$/);
        firstAnswers[mutation.name] = answer;
        const runId = answer.run?.id;
        if (runId) await until(() => ended(first, keys.carol!, runId), `${mutation.name}'s run to end`);
      }
      const rest = await fetch(`${first.url}/api/chat`, {
        method: "POST",
        headers: { ...bearer(keys.carol!), "content-type": "application/json", "idempotency-key": "k-rest" },
        body: JSON.stringify({ message: "Over REST.", conversation }),
      });
      expect(rest.status).toBe(200);
      await rest.text();
      await until(
        async () =>
          (await as(first, keys.carol!, `query($c: ID!) { conversation(id: $c) { activeRun { id } } }`, { c: conversation })).data.conversation.activeRun ===
          null,
        "the REST run to end",
      );

      // Carol's admin role is taken away: her key is revoked, and she gets a user's key. Same id, same idempotency keys.
      await first.storage.apiKeys.revoke(keyIds.carol!, new Date());
      const demoted = await makeKey("carol", "user");
      const before = await snapshot(env.DATABASE_URL, first.databaseFile);
      const missing: Ids = { conversation: crypto.randomUUID(), checkpoint: crypto.randomUUID(), run: crypto.randomUUID() };
      for (const app of [first, second]) {
        for (const mutation of REPLAYED) {
          const replay = Object.values((await as(app, demoted, mutation.query, mutation.variables(ids, `k-${mutation.name}`))).data)[0] as any;
          const none = Object.values((await as(app, demoted, mutation.query, mutation.variables(missing, `k-missing-${mutation.name}`))).data)[0] as any;
          expect(replay.__typename, mutation.name).toBe("NotFoundError");
          // Word for word the missing id's answer, with the id it was asked about.
          expect(none.message, mutation.name).toContain(missing[mutation.names]);
          expect(replay, mutation.name).toEqual({ ...none, message: none.message.replace(missing[mutation.names], ids[mutation.names]) });
        }
        const restReplay = await fetch(`${app.url}/api/chat`, {
          method: "POST",
          headers: { ...bearer(demoted), "content-type": "application/json", "idempotency-key": "k-rest" },
          body: JSON.stringify({ message: "Over REST.", conversation }),
        });
        const restMissing = await fetch(`${app.url}/api/chat`, {
          method: "POST",
          headers: { ...bearer(demoted), "content-type": "application/json", "idempotency-key": "k-rest-missing" },
          body: JSON.stringify({ message: "Over REST.", conversation: missing.conversation }),
        });
        expect(restReplay.status).toBe(404);
        expect(restMissing.status).toBe(404);
        expect((await restReplay.json()).code).toBe((await restMissing.json()).code);
      }
      expect(await snapshot(env.DATABASE_URL, first.databaseFile)).toEqual(before);
      // Made an admin again, Carol gets the first answers back.
      const restored = await makeKey("carol", "admin");
      const again = (await as(second, restored, START, REPLAYED[0]!.variables(ids, "k-startRun"))).data.startRun;
      expect(again).toEqual(firstAnswers.startRun);
      await as(first, ADMIN_TOKEN, `mutation($r: ID!) { cancelRun(input: { runId: $r }) { __typename } }`, { r: held.run });
    });

    it("refuses credentials that would act as API_TOKEN's or the local developer's principal", async () => {
      for (const sub of ["admin", "local"]) {
        const token = await sign({ sub, exp: Math.floor(Date.now() / 1000) + 300 });
        const answer = await as(first, token, `{ me { id role } }`);
        expect(answer.errors?.[0]).toMatchObject({
          message: "the token's user is reserved for another kind of credential",
          extensions: { code: "UNAUTHENTICATED" },
        });
        const socket = await openSocket(second.url, token);
        expect(socket.acked).toBe(false);
        expect((await socket.closed).code).toBe(4401);
      }
      await expect(createApiKey(first.storage.apiKeys, { userId: "admin", role: "admin", label: null })).rejects.toThrow(/reserved/);
      // A refusal names none of the configuration.
      const wrongIssuer = await new SignJWT({ sub: "mallory" })
        .setProtectedHeader({ alg: "HS256" })
        .setIssuer("https://elsewhere.test/")
        .setAudience("elsewhere")
        .setExpirationTime("5m")
        .sign(new TextEncoder().encode(JWT_SECRET));
      const told = JSON.stringify(await as(first, wrongIssuer, `{ me { id } }`));
      expect(told).toMatch(/UNAUTHENTICATED/);
      expect(told).not.toContain(ISSUER);
      expect(told).not.toContain(AUDIENCE);
    });

    it("ends every live stream of a key revoked through the other instance, and runs nothing sent through it afterwards", async () => {
      const dave = await makeKey("dave", "user");
      const held = await holdOpen(dave);
      const runsBefore = JSON.stringify((await as(first, ADMIN_TOKEN, RUN_COUNT)).data);
      // Opened on the instance that executes the run; the key is revoked through the other one.
      const socket = await openSocket(first.url, dave);
      expect(socket.acked).toBe(true);
      const followed = socket.send(RUN_EVENTS, { runId: held.run });
      const sse = collect(sseClient(first.url, bearer(dave)), CONVERSATION_EVENTS, { conversationId: held.conversation });
      const sseEnded = sse.done.then(
        () => "completed",
        () => "ended",
      );
      const chat = chatStream(first.url, held.conversation, dave);
      expect(await chat.status).toBe(200);
      await until(() => socket.of(followed).some((m) => m.type === "next"), "the run's events on the socket");
      await sleep(100);

      await second.storage.apiKeys.revoke(keyIds.dave!, new Date());
      // Sent at once, before any periodic check: refused, or the socket is already closed.
      const start = socket.send(START, { message: "Through a revoked key." });
      expect((await socket.closed).code).toBe(4401);
      expect(socket.of(start).filter((m) => m.type === "next")).toEqual([]);
      await Promise.all([sseEnded, chat.ended]);
      expect(JSON.stringify((await as(first, ADMIN_TOKEN, RUN_COUNT)).data)).toBe(runsBefore);
      // HTTP refuses it too, on both instances.
      for (const app of [first, second]) expect((await as(app, dave, `{ me { id } }`)).errors?.[0]?.extensions?.code).toBe("UNAUTHENTICATED");
      await as(first, ADMIN_TOKEN, `mutation($r: ID!) { cancelRun(input: { runId: $r }) { __typename } }`, { r: held.run });
    });

    it("ends every live stream of a JWT when it expires, and keeps a JWT valid for months open", async () => {
      const long = await sign({ sub: "erin", exp: Math.floor(Date.now() / 1000) + 60 * 86_400 });
      const held = await holdOpen(long);
      const lasting = await openSocket(second.url, long);
      expect(lasting.acked).toBe(true);

      const expiresAt = Math.floor(Date.now() / 1000) + 3;
      const short = await sign({ sub: "erin", exp: expiresAt });
      const socket = await openSocket(second.url, short);
      expect(socket.acked).toBe(true);
      socket.send(RUN_EVENTS, { runId: held.run });
      const sse = collect(sseClient(second.url, bearer(short)), CONVERSATION_EVENTS, { conversationId: held.conversation });
      const sseEnded = sse.done.then(
        () => "completed",
        () => "ended",
      );
      const chat = chatStream(second.url, held.conversation, short);
      expect(await chat.status).toBe(200);
      expect((await socket.closed).code).toBe(4401);
      await Promise.all([sseEnded, chat.ended]);
      expect(Date.now()).toBeGreaterThanOrEqual(expiresAt * 1000 - 50);

      // The long-lived token's socket is still open and answers.
      const me = lasting.send(`{ me { id } }`);
      await until(() => lasting.of(me).some((m) => m.type === "next"), "the long-lived socket's answer");
      expect(lasting.of(me).find((m) => m.type === "next").payload.data).toEqual({ me: { id: "erin" } });
      lasting.socket.close();
      await as(first, long, `mutation($r: ID!) { cancelRun(input: { runId: $r }) { __typename } }`, { r: held.run });
    });

    it("caps one user's live streams across transports and refuses the next with QUOTA_EXCEEDED", async () => {
      const frank = await makeKey("frank", "user");
      const socket = await openSocket(first.url, frank);
      const subscription = `subscription { conversationsChanged { id } }`;
      for (let i = 0; i < STREAM_CAP - 1; i += 1) socket.send(subscription);
      const sse = collect(sseClient(first.url, bearer(frank)), subscription);
      await sleep(300);
      const refusedWs = socket.send(subscription);
      await until(() => socket.of(refusedWs).length > 0, "the refusal");
      expect(socket.of(refusedWs)[0]).toMatchObject({
        type: "error",
        payload: [{ extensions: { code: "QUOTA_EXCEEDED", limit: "QUOTA_STREAMS", streams: STREAM_CAP } }],
      });
      const refusedSse = await fetch(`${first.url}/graphql`, {
        method: "POST",
        headers: { ...bearer(frank), "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify({ query: subscription }),
      });
      expect(refusedSse.status).toBe(429);
      expect(await refusedSse.json()).toMatchObject({ errors: [{ extensions: { code: "QUOTA_EXCEEDED", limit: "QUOTA_STREAMS", streams: STREAM_CAP } }] });
      // Another user is not held back by Frank's streams.
      const alice = await openSocket(first.url, keys.alice!);
      const hers = alice.send(subscription);
      await sleep(200);
      expect(alice.of(hers).filter((m) => m.type === "error")).toEqual([]);
      alice.socket.close();
      // One of Frank's closes: he may open another.
      sse.dispose();
      await sleep(200);
      const again = socket.send(subscription);
      await sleep(200);
      expect(socket.of(again).filter((m) => m.type === "error")).toEqual([]);
      socket.socket.close();
    });
  });
}
