// A notice about a committed conversation change (conversationsChanged) is
// never the request's failure: with the Redis that carries the notices gone,
// a rename or a deletion stands and answers success at once, and the notice
// that could not be delivered is logged as a warning naming the conversation.
import { spawn, type ChildProcess } from "node:child_process";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findRedisServer, freePort } from "../scripts/services.mjs";
import { loadConfig } from "../src/config.ts";
import { createLogger } from "../src/logger.ts";
import { startApp, type App } from "../src/app.ts";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { tempDatabaseUrl, waitForRun } from "../testkit/app.ts";
import { gqlOk, startRun } from "../testkit/graphql.ts";
import { CONVERSATION } from "../testkit/documents.ts";
import { redisServer, SERVICES_TIMEOUT_MS } from "../testkit/services.ts";

const RENAME = /* GraphQL */ `
  mutation Rename($id: ID!, $title: String!) {
    renameConversation(input: { conversationId: $id, title: $title }) { __typename ... on RenameConversationSuccess { conversation { id title } } ... on Error { code message } }
  }
`;
const DELETE = /* GraphQL */ `
  mutation Delete($id: ID!) { deleteConversation(input: { conversationId: $id }) { __typename ... on DeleteConversationSuccess { conversationId } ... on Error { code message } } }
`;

let fake: FakeOllama;
/** A Redis of this spec's own, so it can be killed without touching the run's shared one. */
let redis: ChildProcess;
let redisUrl: string;
let app: App;
const logged: Record<string, unknown>[] = [];

beforeAll(async () => {
  // Installs redis-server if the run has not yet.
  await redisServer();
  const port = await freePort();
  redis = spawn(findRedisServer()!, ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
  redisUrl = `redis://127.0.0.1:${port}`;
  await answersPing(redisUrl);
  fake = await startFakeOllama();
  const config = loadConfig({ PORT: "0", DATABASE_URL: tempDatabaseUrl().url, OLLAMA_HOST: fake.url, REDIS_URL: redisUrl, LOG_LEVEL: "warn" });
  app = await startApp(
    config,
    createLogger(config.logLevel, (line) => logged.push(JSON.parse(line) as Record<string, unknown>)),
  );
}, SERVICES_TIMEOUT_MS);

afterAll(async () => {
  await app?.close();
  await fake?.close();
  if (redis && redis.exitCode === null && redis.signalCode === null) redis.kill("SIGKILL");
});

async function answersPing(url: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on("error", () => {}); // the refusals before it listens: retried here
    try {
      await client.connect();
      await client.ping();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 20));
    } finally {
      client.disconnect();
    }
  }
}

async function until(check: () => boolean, what: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const undelivered = (conversationId: string) =>
  logged.filter((r) => r.level === "warn" && r.msg === "conversation change not delivered" && r.conversationId === conversationId);

describe("conversation change notices with the event bus's Redis gone", () => {
  it("a rename and a deletion stand and answer success at once; each undelivered notice is a warning naming its conversation", async () => {
    const renamed = await startRun(app.url, "rename me");
    const deleted = await startRun(app.url, "delete me");
    await waitForRun(app.url, renamed.runId);
    await waitForRun(app.url, deleted.runId);
    const exited = new Promise((resolve) => redis.once("exit", resolve));
    redis.kill("SIGKILL");
    await exited;

    const started = performance.now();
    const rename = await gqlOk(app.url, RENAME, { id: renamed.conversationId, title: "Renamed without Redis" });
    const deletion = await gqlOk(app.url, DELETE, { id: deleted.conversationId });
    // Not held while the Redis client retries (about ten seconds before it gives up on a command).
    expect(performance.now() - started).toBeLessThan(5000);
    expect(rename.renameConversation).toEqual({
      __typename: "RenameConversationSuccess",
      conversation: { id: renamed.conversationId, title: "Renamed without Redis" },
    });
    expect(deletion.deleteConversation).toEqual({ __typename: "DeleteConversationSuccess", conversationId: deleted.conversationId });
    expect((await gqlOk(app.url, CONVERSATION, { id: renamed.conversationId })).conversation.title).toBe("Renamed without Redis");
    expect((await gqlOk(app.url, CONVERSATION, { id: deleted.conversationId })).conversation).toBeNull();

    await until(
      () => undelivered(renamed.conversationId).length > 0 && undelivered(deleted.conversationId).length > 0,
      "the undelivered notices' warnings",
      40_000,
    );
    expect(undelivered(renamed.conversationId)).toEqual([
      expect.objectContaining({ kind: "updated", error: expect.objectContaining({ message: expect.any(String) }) }),
    ]);
    expect(undelivered(deleted.conversationId)).toEqual([expect.objectContaining({ kind: "deleted" })]);
  }, 60_000);
});
