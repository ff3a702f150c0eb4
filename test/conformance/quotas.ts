// Per-principal quotas on every deployment: runs active at once and writes per
// minute (runs, edits, forks), counted in the database, so they hold on every
// instance; beyond them a typed QuotaExceededError (REST: 429 with Retry-After)
// that changes nothing. And the bound on what one fork copies (MAX_FORK_CHECKPOINTS).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../../testkit/fake-ollama.ts";
import { PROCESS_TEST_TIMEOUT_MS, startTestApp, waitForRun } from "../../testkit/app.ts";
import { startServerProcess } from "../../testkit/processes.ts";
import { gql, gqlOk } from "../../testkit/graphql.ts";
import { CANCEL_RUN } from "../../testkit/documents.ts";
import { until } from "../../testkit/streaming.ts";
import type { App } from "../../src/app.ts";
import { createApiKey } from "../../src/server/identity/api-keys.ts";
import type { Deployment } from "./api.ts";

const START = /* GraphQL */ `
  mutation Start($message: String!, $conversationId: ID) {
    startRun(input: { message: $message, conversationId: $conversationId }) {
      __typename
      ... on StartRunSuccess { run { id } conversation { id } }
      ... on QuotaExceededError { code message limit retryAfterSeconds }
      ... on Error { code message }
    }
  }
`;
const COUNT = /* GraphQL */ `query { conversations(first: 1) { totalCount } }`;
const EDIT = /* GraphQL */ `
  mutation Edit($checkpointId: ID!) {
    editState(input: { checkpointId: $checkpointId, values: { messages: [{ role: "ASSISTANT", content: "A note." }] }, asNode: "agent" }) {
      __typename
      ... on EditStateSuccess { run { id kind status } checkpoint { id } }
      ... on QuotaExceededError { code limit retryAfterSeconds }
      ... on Error { code message }
    }
  }
`;
const FORK = /* GraphQL */ `
  mutation Fork($checkpointId: ID!, $message: String) {
    forkConversation(input: { checkpointId: $checkpointId, message: $message }) {
      __typename
      ... on ForkConversationSuccess { conversation { id } run { id } }
      ... on QuotaExceededError { code limit retryAfterSeconds }
      ... on ValidationError { field }
      ... on Error { code message }
    }
  }
`;
const THREAD = /* GraphQL */ `
  query Thread($id: ID!) { conversation(id: $id) { checkpoints(first: 100) { edges { node { id } } } runs(first: 20) { edges { node { id } } } } }
`;

export function describeQuotaConformance(deployment: Deployment) {
  describe(`quotas on ${deployment.name}`, () => {
    let fake: FakeOllama;
    let app: App & { databaseFile: string };
    let env: Record<string, string>;
    let cleanup: () => Promise<void> = async () => {};

    beforeAll(async () => {
      fake = await startFakeOllama();
      const selected = await deployment.env();
      cleanup = selected.cleanup;
      // The local developer is an admin: QUOTA_ADMINS holds it to the quotas.
      env = { QUOTA_ACTIVE_RUNS: "1", QUOTA_RUNS_PER_MINUTE: "3", QUOTA_ADMINS: "true", MAX_FORK_CHECKPOINTS: "4", ...selected.env };
      app = await startTestApp({ ollamaUrl: fake.url, env });
    }, 60_000);
    afterAll(async () => {
      await app?.close();
      await cleanup();
      await fake?.close();
    });

    it(
      "refuses a start beyond the active runs and beyond the runs per minute, on every instance and over REST, writing nothing",
      { timeout: PROCESS_TEST_TIMEOUT_MS },
      async () => {
        const other = await startServerProcess({ ...env, DATABASE_URL: env.DATABASE_URL ?? `file:${app.databaseFile}`, OLLAMA_HOST: fake.url });
        try {
          fake.enqueue({ kind: "silence", tokens: ["Busy "] });
          const first = (await gqlOk(app.url, START, { message: "One at a time." })).startRun;
          expect(first.__typename).toBe("StartRunSuccess");
          await until(() => fake.openChatRequests() > 0, "the model request");
          const conversations = (await gqlOk(app.url, COUNT)).conversations.totalCount;
          for (const instance of [app, other]) {
            expect((await gqlOk(instance.url, START, { message: "A second one." })).startRun).toMatchObject({
              __typename: "QuotaExceededError",
              code: "QUOTA_EXCEEDED",
              limit: "QUOTA_ACTIVE_RUNS",
              retryAfterSeconds: 1,
            });
          }
          const rest = await fetch(`${other.url}/api/chat`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ message: "Over REST." }),
          });
          expect(rest.status).toBe(429);
          expect(rest.headers.get("retry-after")).toBe("1");
          expect(await rest.json()).toMatchObject({ code: "QUOTA_EXCEEDED", limit: "QUOTA_ACTIVE_RUNS", retryAfterSeconds: 1 });
          // Nothing was written by the refusals.
          expect((await gqlOk(app.url, COUNT)).conversations.totalCount).toBe(conversations);

          await gqlOk(app.url, CANCEL_RUN, { runId: first.run.id });
          // Two more starts fill the minute (three runs); each ends before the next.
          for (const message of ["Two.", "Three."]) {
            const started = (await gqlOk(other.url, START, { message })).startRun;
            expect(started.__typename).toBe("StartRunSuccess");
            expect((await waitForRun(other.url, started.run.id)).status).toBe("COMPLETED");
          }
          for (const instance of [app, other]) {
            const refused = (await gqlOk(instance.url, START, { message: "Four." })).startRun;
            expect(refused).toMatchObject({ __typename: "QuotaExceededError", limit: "QUOTA_RUNS_PER_MINUTE" });
            expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
            expect(refused.retryAfterSeconds).toBeLessThanOrEqual(60);
          }
          expect((await gqlOk(app.url, COUNT)).conversations.totalCount).toBe(conversations + 2);
        } finally {
          expect(await other.stop()).toBe(0);
        }
      },
    );

    /** A user of its own (the minute of the local developer is spent above), calling with its API key. */
    async function userCalls(userId: string) {
      const { key } = await createApiKey(app.storage.apiKeys, { userId, role: "user", label: "quotas" });
      return async (query: string, variables?: Record<string, unknown>) => {
        const result = await gql(app.url, query, variables, { authorization: `Bearer ${key}` });
        if (result.errors?.length) throw new Error(`GraphQL errors: ${JSON.stringify(result.errors)}`);
        return result.data;
      };
    }

    it("counts edits and forks with the runs toward the writes per minute, and refuses each beyond them, writing nothing", async () => {
      const call = await userCalls("dana");
      const checkpointsOf = async (id: string) => (await call(THREAD, { id })).conversation.checkpoints.edges.map((e: any) => e.node.id as string);
      // Three writes: a run, an edit of its head, a fork without a message.
      const started = (await call(START, { message: "Note this." })).startRun;
      expect(started.__typename).toBe("StartRunSuccess");
      expect((await waitForRun(app.url, started.run.id)).status).toBe("COMPLETED");
      const conversationId = started.conversation.id;
      const edited = (await call(EDIT, { checkpointId: (await checkpointsOf(conversationId)).at(-1) })).editState;
      expect(edited).toMatchObject({ __typename: "EditStateSuccess", run: { kind: "EDIT", status: "COMPLETED" } });
      const forked = (await call(FORK, { checkpointId: edited.checkpoint.id })).forkConversation;
      expect(forked).toMatchObject({ __typename: "ForkConversationSuccess", run: null });

      const checkpoints = await checkpointsOf(conversationId);
      const conversations = (await call(COUNT)).conversations.totalCount;
      const refused = { __typename: "QuotaExceededError", code: "QUOTA_EXCEEDED", limit: "QUOTA_RUNS_PER_MINUTE" };
      const refusals = [
        (await call(EDIT, { checkpointId: checkpoints.at(-1) })).editState,
        (await call(FORK, { checkpointId: checkpoints.at(-1) })).forkConversation,
        (await call(FORK, { checkpointId: checkpoints.at(-1), message: "And go on." })).forkConversation,
        (await call(START, { message: "One more.", conversationId })).startRun,
        (await call(START, { message: "Elsewhere." })).startRun,
      ];
      for (const refusal of refusals) {
        expect(refusal).toMatchObject(refused);
        expect(refusal.retryAfterSeconds).toBeGreaterThanOrEqual(1);
        expect(refusal.retryAfterSeconds).toBeLessThanOrEqual(60);
      }
      // Nothing was written: no checkpoint, no run, no conversation.
      expect(await checkpointsOf(conversationId)).toEqual(checkpoints);
      expect((await call(THREAD, { id: conversationId })).conversation.runs.edges).toHaveLength(2);
      expect((await call(COUNT)).conversations.totalCount).toBe(conversations);
    });

    it("refuses a fork that would copy more than MAX_FORK_CHECKPOINTS checkpoints before copying any, and forks at an earlier one", async () => {
      const call = await userCalls("erin");
      const first = (await call(START, { message: "One." })).startRun;
      expect((await waitForRun(app.url, first.run.id)).status).toBe("COMPLETED");
      const conversationId = first.conversation.id;
      const second = (await call(START, { message: "Two.", conversationId })).startRun;
      expect((await waitForRun(app.url, second.run.id)).status).toBe("COMPLETED");
      const checkpoints = (await call(THREAD, { id: conversationId })).conversation.checkpoints.edges.map((e: any) => e.node.id as string);
      // One thread, no branch: the chain to the nth checkpoint is n long.
      expect(checkpoints.length).toBeGreaterThan(4);
      const conversations = (await call(COUNT)).conversations.totalCount;
      const tooLong = (await call(FORK, { checkpointId: checkpoints[4] })).forkConversation;
      expect(tooLong).toMatchObject({ __typename: "ValidationError", field: "checkpointId" });
      expect(tooLong.message).toContain("MAX_FORK_CHECKPOINTS");
      expect((await call(COUNT)).conversations.totalCount).toBe(conversations);
      // A refused fork is no write: the minute still has room for the one that fits.
      const fits = (await call(FORK, { checkpointId: checkpoints[3] })).forkConversation;
      expect(fits.__typename).toBe("ForkConversationSuccess");
      const copied = (await call(THREAD, { id: fits.conversation.id })).conversation.checkpoints.edges;
      expect(copied).toHaveLength(4);
    });

    it("leaves admins out of the quotas unless QUOTA_ADMINS is true", { timeout: PROCESS_TEST_TIMEOUT_MS }, async () => {
      // The same database, limits reached above; this instance does not hold admins to them. A process of
      // its own: two instances in one process would take each other for a previous incarnation and recover its runs.
      const exempt = await startServerProcess({
        ...env,
        DATABASE_URL: env.DATABASE_URL ?? `file:${app.databaseFile}`,
        OLLAMA_HOST: fake.url,
        QUOTA_ADMINS: "false",
      });
      try {
        const started = (await gqlOk(exempt.url, START, { message: "Admins go ahead." })).startRun;
        expect(started.__typename).toBe("StartRunSuccess");
        expect((await waitForRun(exempt.url, started.run.id)).status).toBe("COMPLETED");
      } finally {
        expect(await exempt.stop()).toBe(0);
      }
    });
  });
}
