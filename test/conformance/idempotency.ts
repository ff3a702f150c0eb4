// Idempotency keys on every deployment: a retry with the same key and input
// answers the first call's result and does nothing again, also when the
// retries race on two instances; the same key with another input is a typed
// IdempotencyKeyReusedError that changes nothing; keys belong to their caller;
// startRun, resumeRun, cancelRun, forkConversation, editState and the REST
// lab's Idempotency-Key header all keep them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../../testkit/fake-ollama.ts";
import { PROCESS_TEST_TIMEOUT_MS, startTestApp } from "../../testkit/app.ts";
import { startServerProcess } from "../../testkit/processes.ts";
import { gql } from "../../testkit/graphql.ts";
import { until } from "../../testkit/streaming.ts";
import { createApiKey } from "../../src/server/identity/api-keys.ts";
import type { App } from "../../src/app.ts";
import type { Deployment } from "./api.ts";

const TOKEN = "idempotency-admin-token";
const START = /* GraphQL */ `
  mutation ($message: String!, $conversationId: ID, $key: String) {
    startRun(input: { message: $message, conversationId: $conversationId, idempotencyKey: $key }) {
      __typename
      ... on StartRunSuccess { run { id } conversation { id } }
      ... on IdempotencyKeyReusedError { code idempotencyKey operation }
      ... on ValidationError { code field }
    }
  }
`;
const RESUME = /* GraphQL */ `
  mutation ($conversationId: ID!, $key: String) {
    resumeRun(input: { conversationId: $conversationId, idempotencyKey: $key }) { __typename ... on ResumeRunSuccess { run { id } } ... on Error { code } }
  }
`;
const CANCEL = /* GraphQL */ `
  mutation ($runId: ID!, $key: String) {
    cancelRun(input: { runId: $runId, idempotencyKey: $key }) { __typename ... on CancelRunSuccess { run { id status } } ... on Error { code } }
  }
`;
const FORK = /* GraphQL */ `
  mutation ($checkpointId: ID!, $message: String, $key: String) {
    forkConversation(input: { checkpointId: $checkpointId, message: $message, idempotencyKey: $key }) {
      __typename
      ... on ForkConversationSuccess { conversation { id } run { id } }
      ... on Error { code }
    }
  }
`;
const STATE = /* GraphQL */ `
  query ($id: ID!) { conversation(id: $id) { runs(first: 50) { totalCount edges { node { id status } } } checkpoints(first: 1) { edges { node { id } } } } }
`;
const COUNT = /* GraphQL */ `query { conversations(first: 1) { totalCount } }`;
const EDIT = /* GraphQL */ `
  mutation ($checkpointId: ID!, $values: JSON!, $key: String) {
    editState(input: { checkpointId: $checkpointId, values: $values, asNode: "__start__", idempotencyKey: $key }) {
      __typename
      ... on EditStateSuccess { run { id kind } }
      ... on IdempotencyKeyReusedError { code operation }
      ... on Error { code }
    }
  }
`;
const said = (content: string) => ({ messages: [{ role: "USER", content }] });
const EDITS = /* GraphQL */ `
  query ($id: ID!) { conversation(id: $id) { runs(first: 50) { edges { node { id kind status } } } checkpoints(first: 100) { edges { node { id source run { id } } } } } }
`;

export function describeIdempotencyConformance(deployment: Deployment) {
  describe(`idempotency keys on ${deployment.name}`, () => {
    let fake: FakeOllama;
    let app: App & { databaseFile: string };
    let env: Record<string, string>;
    let cleanup: () => Promise<void> = async () => {};
    let alice: Record<string, string>;
    let bob: Record<string, string>;
    const admin = { authorization: `Bearer ${TOKEN}` };

    beforeAll(async () => {
      fake = await startFakeOllama();
      const selected = await deployment.env();
      cleanup = selected.cleanup;
      env = { API_TOKEN: TOKEN, ...selected.env };
      app = await startTestApp({ ollamaUrl: fake.url, env });
      alice = { authorization: `Bearer ${(await createApiKey(app.storage.apiKeys, { userId: "alice", role: "user", label: null })).key}` };
      bob = { authorization: `Bearer ${(await createApiKey(app.storage.apiKeys, { userId: "bob", role: "user", label: null })).key}` };
    }, 60_000);
    afterAll(async () => {
      await app?.close();
      await cleanup();
      await fake?.close();
    });

    const ended = async (runId: string, headers: Record<string, string>) =>
      until(
        async () =>
          !["QUEUED", "RUNNING"].includes((await gql(app.url, `query ($id: ID!) { run(id: $id) { status } }`, { id: runId }, headers)).data.run.status),
        "the run to end",
      );

    it("answers a retried startRun with the first call's run, refuses the key with another input, and keeps each caller's keys apart", async () => {
      const before = (await gql(app.url, COUNT, {}, admin)).data.conversations.totalCount;
      const first = (await gql(app.url, START, { message: "Only once, please.", key: "retry-1" }, alice)).data.startRun;
      expect(first.__typename).toBe("StartRunSuccess");
      const again = (await gql(app.url, START, { message: "Only once, please.", key: "retry-1" }, alice)).data.startRun;
      expect(again).toEqual(first);
      expect((await gql(app.url, START, { message: "Something else.", key: "retry-1" }, alice)).data.startRun).toEqual({
        __typename: "IdempotencyKeyReusedError",
        code: "IDEMPOTENCY_KEY_REUSED",
        idempotencyKey: "retry-1",
        operation: "startRun",
      });
      // Bob's key of the same name is his own: a run of his.
      const bobs = (await gql(app.url, START, { message: "Only once, please.", key: "retry-1" }, bob)).data.startRun;
      expect(bobs.__typename).toBe("StartRunSuccess");
      expect(bobs.run.id).not.toBe(first.run.id);
      expect((await gql(app.url, COUNT, {}, admin)).data.conversations.totalCount).toBe(before + 2);
      expect((await gql(app.url, START, { message: "x", key: "k".repeat(256) }, alice)).data.startRun).toEqual({
        __typename: "ValidationError",
        code: "VALIDATION",
        field: "idempotencyKey",
      });
      await ended(first.run.id, alice);
      await ended(bobs.run.id, bob);
      expect(fake.requests.filter((r) => r.messages.some((m) => m.content === "Only once, please.")).length).toBe(2);
    });

    it("creates one run for retries racing on two instances", { timeout: PROCESS_TEST_TIMEOUT_MS }, async () => {
      const other = await startServerProcess({ ...env, DATABASE_URL: env.DATABASE_URL ?? `file:${app.databaseFile}`, OLLAMA_HOST: fake.url });
      try {
        const answers = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            gql(i % 2 ? other.url : app.url, START, { message: "Raced.", key: "race-1" }, alice).then((r) => r.data.startRun),
          ),
        );
        expect(new Set(answers.map((a) => `${a.__typename} ${a.run?.id}`)).size).toBe(1);
        expect(answers[0].__typename).toBe("StartRunSuccess");
        await ended(answers[0].run.id, alice);
        expect(fake.requests.filter((r) => r.messages.some((m) => m.content === "Raced.")).length).toBe(1);
      } finally {
        await other.stop();
      }
    });

    it("keeps resumeRun, cancelRun and forkConversation keys too, and the REST lab's Idempotency-Key header", async () => {
      fake.enqueue({ kind: "silence", tokens: ["Half "] });
      const started = (await gql(app.url, START, { message: "Cancel me." }, alice)).data.startRun;
      await until(() => fake.openChatRequests() > 0, "the model request");
      const cancel = (await gql(app.url, CANCEL, { runId: started.run.id, key: "cancel-1" }, alice)).data.cancelRun;
      expect(cancel).toMatchObject({ __typename: "CancelRunSuccess", run: { status: "CANCELLED" } });
      // The retry answers the same cancel, not RunNotActiveError.
      expect((await gql(app.url, CANCEL, { runId: started.run.id, key: "cancel-1" }, alice)).data.cancelRun).toEqual(cancel);

      const resumed = (await gql(app.url, RESUME, { conversationId: started.conversation.id, key: "resume-1" }, alice)).data.resumeRun;
      expect(resumed.__typename).toBe("ResumeRunSuccess");
      expect((await gql(app.url, RESUME, { conversationId: started.conversation.id, key: "resume-1" }, alice)).data.resumeRun).toEqual(resumed);
      await ended(resumed.run.id, alice);
      const state = (await gql(app.url, STATE, { id: started.conversation.id }, alice)).data.conversation;
      expect(state.runs.totalCount).toBe(2);

      const checkpointId = state.checkpoints.edges[0].node.id;
      const fork = (await gql(app.url, FORK, { checkpointId, key: "fork-1" }, alice)).data.forkConversation;
      expect(fork.__typename).toBe("ForkConversationSuccess");
      expect((await gql(app.url, FORK, { checkpointId, key: "fork-1" }, alice)).data.forkConversation).toEqual(fork);
      expect((await gql(app.url, FORK, { checkpointId, message: "and go", key: "fork-1" }, alice)).data.forkConversation).toMatchObject({
        __typename: "IdempotencyKeyReusedError",
      });

      const post = (body: unknown) =>
        fetch(`${app.url}/api/chat`, {
          method: "POST",
          headers: { "content-type": "application/json", "idempotency-key": "rest-1", ...alice },
          body: JSON.stringify(body),
        });
      const one = await post({ message: "Over REST, once." });
      expect(one.status).toBe(200);
      const first = await one.json();
      const two = await post({ message: "Over REST, once." });
      expect(await two.json()).toEqual(first);
      const other = await post({ message: "Another body." });
      expect(other.status).toBe(422);
      expect(await other.json()).toMatchObject({ code: "IDEMPOTENCY_KEY_REUSED", operation: "startRun" });
      await ended(first.run, alice);
    });

    it(
      "keeps editState keys: retries racing on two instances record one EDIT run and one checkpoint; another input is refused; keys stay their caller's",
      {
        timeout: PROCESS_TEST_TIMEOUT_MS,
      },
      async () => {
        const started = (await gql(app.url, START, { message: "Edit me later." }, alice)).data.startRun;
        await ended(started.run.id, alice);
        const conversationId = started.conversation.id;
        const checkpointId = (await gql(app.url, STATE, { id: conversationId }, alice)).data.conversation.checkpoints.edges[0].node.id;
        const other = await startServerProcess({ ...env, DATABASE_URL: env.DATABASE_URL ?? `file:${app.databaseFile}`, OLLAMA_HOST: fake.url });
        try {
          const answers = await Promise.all(
            Array.from({ length: 6 }, (_, i) =>
              gql(i % 2 ? other.url : app.url, EDIT, { checkpointId, values: said("Edited once."), key: "edit-1" }, alice).then((r) => r.data?.editState ?? r),
            ),
          );
          expect(answers.map((a) => a.__typename ?? JSON.stringify(a).slice(0, 300))).toEqual(Array(6).fill("EditStateSuccess"));
          expect(new Set(answers.map((a) => a.run.id)).size).toBe(1);
        } finally {
          await other.stop();
        }
        const after = (await gql(app.url, EDITS, { id: conversationId }, alice)).data.conversation;
        const edits = after.runs.edges.filter((e: any) => e.node.kind === "EDIT");
        expect(edits).toHaveLength(1);
        const updates = after.checkpoints.edges.filter((e: any) => e.node.source === "UPDATE");
        expect(updates.map((e: any) => e.node.run.id)).toEqual([edits[0].node.id]);
        expect((await gql(app.url, EDIT, { checkpointId, values: said("Edited twice."), key: "edit-1" }, alice)).data.editState).toEqual({
          __typename: "IdempotencyKeyReusedError",
          code: "IDEMPOTENCY_KEY_REUSED",
          operation: "editState",
        });
        // Bob's key of the same name does not answer Alice's edit: her checkpoint is missing to him.
        expect((await gql(app.url, EDIT, { checkpointId, values: said("Edited once."), key: "edit-1" }, bob)).data.editState).toEqual({
          __typename: "NotFoundError",
          code: "NOT_FOUND",
        });
      },
    );
  });
}
