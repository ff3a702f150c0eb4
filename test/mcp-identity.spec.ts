// A tool acts on behalf of the user: an HTTP MCP server configured for it
// receives the caller's identity on each tool call (userHeaders: the caller's
// id, role and passed-on claims; forwardToken: the caller's own JWT), the
// server's connection being shared by every caller. A server not configured
// for it receives none, and the token is never stored. The connection's own
// requests (a ping, initialize, tools/list, the SSE stream), even when a
// caller's call is what set them off, carry no caller's identity.
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp } from "../testkit/app.ts";
import { until } from "../testkit/streaming.ts";
import { gql } from "../testkit/graphql.ts";
import { startHttpFixture, type HttpFixture } from "./fixtures/mcp/helpers.ts";
import { createApiKey } from "../src/server/identity/api-keys.ts";
import type { App } from "../src/app.ts";

const SECRET = "a shared secret of thirty-two bytes or more, for tools";

let fake: FakeOllama;
let web: HttpFixture;
let flaky: HttpFixture;
let flakyLog: string;
let app: App & { databaseFile: string };

beforeAll(async () => {
  // Each turn: the model calls `headers`, then answers once it has the result (so concurrent runs each get both steps).
  fake = await startFakeOllama({
    responder: (request) =>
      request.messages.at(-1)?.role === "tool" ? { kind: "text", tokens: ["Done."] } : { kind: "toolCalls", calls: [{ name: "headers", args: {} }] },
  });
  web = await startHttpFixture({ MCP_FIXTURE_NAME: "web" });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-mcp-identity-"));
  flakyLog = path.join(dir, "flaky-requests.jsonl");
  flaky = await startHttpFixture({ MCP_FIXTURE_NAME: "flaky", MCP_FIXTURE_REQUEST_LOG: flakyLog });
  const agents = path.join(dir, "agents.json");
  const identity = { userHeaders: { "X-User-Id": "id", "X-User-Role": "role", "X-Tenant": "claims.tenant" }, forwardToken: true };
  fs.writeFileSync(
    agents,
    JSON.stringify({
      agents: {
        default: { type: "chat", tools: [], mcpServers: { web: { url: web.url, tools: ["headers"], ...identity } } },
        plain: { type: "chat", tools: [], mcpServers: { web: { url: web.url, tools: ["headers"] } } },
        flaky: { type: "chat", tools: [], mcpServers: { web: { url: flaky.url, tools: ["headers"], ...identity } } },
      },
    }),
  );
  app = await startTestApp({ ollamaUrl: fake.url, env: { AUTH_JWT_SECRET: SECRET, AUTH_AGENT_CLAIMS: "tenant", RUNLEDGER_CONFIG: agents } });
});
afterAll(async () => {
  await app?.close();
  await web?.kill();
  await flaky?.kill();
  await fake?.close();
});

/** How the fixture's `headers` tool shows an Authorization header (the thread keeps the tool's answer). */
const sha256 = (text: string) => `sha256:${createHash("sha256").update(text).digest("hex")}`;

async function jwtFor(subject: string, claims: Record<string, unknown>): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(subject)
    .setIssuedAt(now)
    .setExpirationTime(now + 120)
    .sign(new TextEncoder().encode(SECRET));
}

/** Runs one turn in which the model calls the `headers` tool; answers the headers the MCP server saw. */
async function headersSeenBy(credential: string, agent: string): Promise<Record<string, string>> {
  return JSON.parse(await toolAnswer(credential, agent));
}

/** Runs one turn in which the model calls the `headers` tool; answers the tool message (an error's text when the call failed). */
async function toolAnswer(credential: string, agent: string): Promise<string> {
  const headers = { authorization: `Bearer ${credential}` };
  const result = await gql(
    app.url,
    `mutation($agent: String) { startRun(input: { message: "call it", agent: $agent }) { __typename ... on StartRunSuccess { run { id } conversation { id } } } }`,
    { agent },
    headers,
  );
  const started = result.data.startRun;
  expect(started.__typename).toBe("StartRunSuccess");
  const status = () => gql(app.url, `query($id: ID!) { run(id: $id) { status } }`, { id: started.run.id }, headers).then((r) => r.data.run.status);
  await until(async () => (await status()) !== "RUNNING", "the run to end");
  expect(await status()).toBe("COMPLETED");
  const { conversation } = (
    await gql(app.url, `query($id: ID!) { conversation(id: $id) { messages { role content } } }`, { id: started.conversation.id }, headers)
  ).data;
  const tool = conversation.messages.find((m: { role: string }) => m.role === "TOOL");
  return tool.content;
}

describe("an HTTP MCP server told whom a tool call works for", () => {
  it("receives each caller's id, role, listed claim and own JWT on that caller's calls, over one shared connection", async () => {
    const alice = await jwtFor("alice", { tenant: "acme" });
    const bob = await jwtFor("bob", { tenant: "globex" });
    const [seenForAlice, seenForBob] = await Promise.all([headersSeenBy(alice, "default"), headersSeenBy(bob, "default")]);
    expect(seenForAlice).toMatchObject({ "x-user-id": "alice", "x-user-role": "user", "x-tenant": "acme", authorization: sha256(`Bearer ${alice}`) });
    expect(seenForBob).toMatchObject({ "x-user-id": "bob", "x-user-role": "user", "x-tenant": "globex", authorization: sha256(`Bearer ${bob}`) });
    // Neither token is stored anywhere: not in a checkpoint, a write or a run.
    const files = [app.databaseFile, `${app.databaseFile}-wal`].filter((f) => fs.existsSync(f));
    for (const file of files) for (const token of [alice, bob]) expect(fs.readFileSync(file).includes(Buffer.from(token)), file).toBe(false);
  });

  it("sends no token for a caller that signed in with an API key, and leaves out a claim the caller lacks", async () => {
    const { key } = await createApiKey(app.storage.apiKeys, { userId: "carol", role: "admin", label: "script" });
    const seen = await headersSeenBy(key, "default");
    expect(seen).toMatchObject({ "x-user-id": "carol", "x-user-role": "admin" });
    expect(seen).not.toHaveProperty("x-tenant");
    expect(seen).not.toHaveProperty("authorization");
  });

  it("tells a server not configured for it nothing about the caller", async () => {
    const seen = await headersSeenBy(await jwtFor("alice", { tenant: "acme" }), "plain");
    expect(Object.keys(seen).filter((h) => h.startsWith("x-user") || h === "x-tenant" || h === "authorization")).toEqual([]);
  });
});

interface LoggedRequest {
  http: string;
  rpc: string | null;
  headers: Record<string, string>;
}

const flakyRequests = (): LoggedRequest[] =>
  fs
    .readFileSync(flakyLog, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as LoggedRequest);

/** The caller's identity among a request's headers. */
const identityIn = (headers: Record<string, string>) =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => name.startsWith("x-user") || name === "x-tenant" || name === "authorization"));

const flakyReady = async () => ((await (await fetch(`${app.url}/ready`)).json()) as { mcpServers?: Record<string, string> }).mcpServers?.["flaky/web"] === "ok";

describe("an HTTP MCP server that loses the session in the middle of a caller's call", () => {
  it("gets the connection's own requests (ping, initialize, tools/list, the SSE stream) without that caller's identity, and the next caller's call with the next caller's", async () => {
    const alice = await jwtFor("alice", { tenant: "acme" });
    const bob = await jwtFor("bob", { tenant: "globex" });
    const start = flakyRequests().length;
    // Every later request on the old session is answered 404: alice's tool call first. The connection then
    // pings the server, gives the session up and connects again, all of it set off from within her call.
    expect((await fetch(new URL("/forget-sessions", flaky.url), { method: "POST" })).status).toBe(204);
    expect(await toolAnswer(alice, "flaky")).toMatch(/404|session/i);
    await until(async () => {
      const since = flakyRequests().slice(start);
      return since.some((r) => r.rpc === "tools/list") && since.some((r) => r.http === "GET") && (await flakyReady());
    }, "the connection to the MCP server to come back, its SSE stream open");
    const seenForBob = await headersSeenBy(bob, "flaky");
    expect(seenForBob).toMatchObject({ "x-user-id": "bob", "x-tenant": "globex", authorization: sha256(`Bearer ${bob}`) });

    const requests = flakyRequests().slice(start);
    const own = requests.filter((r) => r.rpc !== "tools/call");
    expect(own.map((r) => `${r.http} ${r.rpc ?? ""}`.trim())).toEqual(
      expect.arrayContaining(["POST ping", "POST initialize", "POST notifications/initialized", "POST tools/list", "GET"]),
    );
    const carryingIdentity = own.filter((r) => Object.keys(identityIn(r.headers)).length > 0);
    expect(carryingIdentity.map((r) => `${r.http} ${r.rpc ?? ""} as ${r.headers["x-user-id"]}`.replace("  ", " "))).toEqual([]);
    expect(requests.filter((r) => r.rpc === "tools/call").map((r) => identityIn(r.headers))).toEqual([
      { "x-user-id": "alice", "x-user-role": "user", "x-tenant": "acme", authorization: sha256(`Bearer ${alice}`) },
      { "x-user-id": "bob", "x-user-role": "user", "x-tenant": "globex", authorization: sha256(`Bearer ${bob}`) },
    ]);
  });
});
