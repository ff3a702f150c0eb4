// Multitask on every deployment: a message sent while the conversation's run is
// active. REJECT (the default) refuses it; INTERRUPT cancels the active run (its
// partial output kept) and starts the new one on the thread as it was left;
// ROLLBACK cancels it and drops the checkpoints it wrote, so the new run starts
// where the cancelled one did. The derived fields stay true after each.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../../testkit/fake-ollama.ts";
import { startTestApp, waitForRun } from "../../testkit/app.ts";
import { gqlOk } from "../../testkit/graphql.ts";
import { until } from "../../testkit/streaming.ts";
import type { App } from "../../src/app.ts";
import { LOCAL_PRINCIPAL } from "../../src/domain/principal.ts";
import type { Deployment } from "./api.ts";
import { expectDerivedFieldsTrue } from "./derived-fields.ts";

const START = /* GraphQL */ `
  mutation ($message: String!, $conversationId: ID, $multitask: Multitask) {
    startRun(input: { message: $message, conversationId: $conversationId, multitask: $multitask }) {
      __typename
      ... on StartRunSuccess { run { id } conversation { id } }
      ... on RunInProgressError { code activeRunId }
    }
  }
`;
const DETAILS = /* GraphQL */ `
  query ($id: ID!, $runId: ID!) {
    conversation(id: $id) { messages { role content } }
    run(id: $runId) { status errorCode partialOutput checkpoints { id } }
  }
`;

export function describeMultitaskConformance(deployment: Deployment) {
  describe(`multitask on ${deployment.name}`, () => {
    let fake: FakeOllama;
    let app: App;
    let cleanup: () => Promise<void> = async () => {};

    beforeAll(async () => {
      fake = await startFakeOllama();
      const selected = await deployment.env();
      cleanup = selected.cleanup;
      app = await startTestApp({ ollamaUrl: fake.url, env: selected.env });
    }, 60_000);
    afterEach(() => expectDerivedFieldsTrue(app.url, () => app.services.runs.activeRunIds.length === 0));
    afterAll(async () => {
      await app?.close();
      await cleanup();
      await fake?.close();
    });

    /** A conversation with one completed turn, then a run that streams "Half " and goes silent. */
    async function busyConversation(): Promise<{ conversationId: string; busyRunId: string }> {
      const first = (await gqlOk(app.url, START, { message: "First turn." })).startRun;
      await waitForRun(app.url, first.run.id);
      fake.enqueue({ kind: "silence", tokens: ["Half "] });
      const busy = (await gqlOk(app.url, START, { message: "A long question.", conversationId: first.conversation.id })).startRun;
      await until(() => fake.openChatRequests() > 0, "the model request");
      return { conversationId: first.conversation.id, busyRunId: busy.run.id };
    }

    it("REJECT, the default: refuses the message with RunInProgressError naming the active run", async () => {
      const { conversationId, busyRunId } = await busyConversation();
      for (const multitask of [undefined, "REJECT"]) {
        expect((await gqlOk(app.url, START, { message: "Now!", conversationId, multitask })).startRun).toEqual({
          __typename: "RunInProgressError",
          code: "RUN_IN_PROGRESS",
          activeRunId: busyRunId,
        });
      }
      await app.services.runs.cancelRun({ runId: busyRunId }, LOCAL_PRINCIPAL);
    });

    it("INTERRUPT: the active run ends CANCELLED with its partial output; the new one runs on the thread it left", async () => {
      const { conversationId, busyRunId } = await busyConversation();
      const next = (await gqlOk(app.url, START, { message: "Forget that.", conversationId, multitask: "INTERRUPT" })).startRun;
      expect(next.__typename).toBe("StartRunSuccess");
      expect(await waitForRun(app.url, next.run.id)).toMatchObject({ status: "COMPLETED" });
      const { conversation, run } = await gqlOk(app.url, DETAILS, { id: conversationId, runId: busyRunId });
      expect(run).toMatchObject({ status: "CANCELLED", errorCode: "CANCELLED", partialOutput: "Half " });
      expect(run.checkpoints.length).toBeGreaterThan(0);
      expect(conversation.messages.map((m: { content: string }) => m.content)).toEqual([
        "First turn.",
        "Echo: First turn.",
        "A long question.",
        "Forget that.",
        "Echo: Forget that.",
      ]);
    });

    it("ROLLBACK: the active run ends CANCELLED and its checkpoints are gone; the new one starts where it did", async () => {
      const { conversationId, busyRunId } = await busyConversation();
      const next = (await gqlOk(app.url, START, { message: "Start over.", conversationId, multitask: "ROLLBACK" })).startRun;
      expect(next.__typename).toBe("StartRunSuccess");
      expect(await waitForRun(app.url, next.run.id)).toMatchObject({ status: "COMPLETED" });
      const { conversation, run } = await gqlOk(app.url, DETAILS, { id: conversationId, runId: busyRunId });
      expect(run).toMatchObject({ status: "CANCELLED", errorCode: "CANCELLED", checkpoints: [] });
      expect(conversation.messages.map((m: { content: string }) => m.content)).toEqual([
        "First turn.",
        "Echo: First turn.",
        "Start over.",
        "Echo: Start over.",
      ]);
    });
  });
}
