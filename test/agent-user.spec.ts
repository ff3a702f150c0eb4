// The agent knows who it works for: a graph agent receives the caller as
// config.configurable.user (id, role, the claims AUTH_AGENT_CLAIMS lists), and
// none of it is stored in the thread (LangGraph keeps configurable out of its
// checkpoints; the database file is searched for the claim's value).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { ROOT, startTestApp } from "../testkit/app.ts";
import { until } from "../testkit/streaming.ts";
import { gql } from "../testkit/graphql.ts";
import type { App } from "../src/app.ts";

const SECRET = "another shared secret of thirty-two bytes or more";
const EMAIL = "alice.private@example.test";

let fake: FakeOllama;
let app: App & { databaseFile: string };

beforeAll(async () => {
  fake = await startFakeOllama();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-agent-user-"));
  const agents = path.join(dir, "agents.json");
  fs.writeFileSync(
    agents,
    JSON.stringify({ agents: { default: { type: "graph", module: path.join(ROOT, "test", "fixtures", "graphs", "whoami.ts"), export: "graph" } } }),
  );
  app = await startTestApp({ ollamaUrl: fake.url, env: { AUTH_JWT_SECRET: SECRET, AUTH_AGENT_CLAIMS: "email", RUNLEDGER_CONFIG: agents } });
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

describe("a graph agent and the caller", () => {
  it("receives the caller's id, role and listed claims as config.configurable.user, and never stores them in the thread", async () => {
    const now = Math.floor(Date.now() / 1000);
    const jwt = await new SignJWT({ email: EMAIL, name: "not listed" })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject("alice")
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(new TextEncoder().encode(SECRET));
    const headers = { authorization: `Bearer ${jwt}` };
    const started = (
      await gql(app.url, `mutation { startRun(input: { message: "who am I?" }) { ... on StartRunSuccess { run { id } conversation { id } } } }`, {}, headers)
    ).data.startRun;
    const status = () => gql(app.url, `query($id: ID!) { run(id: $id) { status } }`, { id: started.run.id }, headers).then((r) => r.data.run.status);
    await until(async () => (await status()) !== "RUNNING", "the run to end");
    expect(await status()).toBe("COMPLETED");
    const { conversation } = (
      await gql(app.url, `query($id: ID!) { conversation(id: $id) { messages { role content } } }`, { id: started.conversation.id }, headers)
    ).data;
    expect(conversation.messages.at(-1)).toEqual({ role: "ASSISTANT", content: "alice (user) with an email claim" });
    // The claim's value is nowhere in the database: not in a checkpoint, its metadata or a write.
    const files = [app.databaseFile, `${app.databaseFile}-wal`].filter((f) => fs.existsSync(f));
    for (const file of files) expect(fs.readFileSync(file).includes(Buffer.from(EMAIL)), file).toBe(false);
    // The search can find what is stored: the answer is there.
    expect(files.some((file) => fs.readFileSync(file).includes(Buffer.from("alice (user) with an email claim")))).toBe(true);
  });
});
