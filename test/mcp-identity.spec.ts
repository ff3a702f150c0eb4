// A tool acts on behalf of the user: an HTTP MCP server configured for it
// receives the caller's identity on each tool call (userHeaders: the caller's
// id, role and passed-on claims; forwardToken: the caller's own JWT), the
// server's connection being shared by every caller. A server not configured
// for it receives none, and the token is never stored.
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
let app: App & { databaseFile: string };

beforeAll(async () => {
  // Each turn: the model calls `headers`, then answers once it has the result (so concurrent runs each get both steps).
  fake = await startFakeOllama({
    responder: (request) =>
      request.messages.at(-1)?.role === "tool" ? { kind: "text", tokens: ["Done."] } : { kind: "toolCalls", calls: [{ name: "headers", args: {} }] },
  });
  web = await startHttpFixture({ MCP_FIXTURE_NAME: "web" });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-mcp-identity-"));
  const agents = path.join(dir, "agents.json");
  const identity = { userHeaders: { "X-User-Id": "id", "X-User-Role": "role", "X-Tenant": "claims.tenant" }, forwardToken: true };
  fs.writeFileSync(
    agents,
    JSON.stringify({
      agents: {
        default: { type: "chat", tools: [], mcpServers: { web: { url: web.url, tools: ["headers"], ...identity } } },
        plain: { type: "chat", tools: [], mcpServers: { web: { url: web.url, tools: ["headers"] } } },
      },
    }),
  );
  app = await startTestApp({ ollamaUrl: fake.url, env: { AUTH_JWT_SECRET: SECRET, AUTH_AGENT_CLAIMS: "tenant", RUNLEDGER_CONFIG: agents } });
});
afterAll(async () => {
  await app?.close();
  await web?.kill();
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
  return JSON.parse(tool.content);
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
