// Multitask on every deployment: a message sent while the conversation's run is
// active. REJECT (the default) refuses it; INTERRUPT cancels the active run (its
// partial output kept) and starts the new one on the thread as it was left;
// ROLLBACK cancels it and drops the checkpoints it wrote, so the new run starts
// where the cancelled one did; ENQUEUE queues it behind the active run (and any
// others waiting there), each run in turn with its own checkpoints. The derived
// fields stay true after each.
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
const QUEUED_RUN = /* GraphQL */ `
  query ($id: ID!) { run(id: $id) { status queueReason queuePosition } }
`;
const ACTIVE = /* GraphQL */ `
  query ($id: ID!) { conversation(id: $id) { activeRun { id } } }
`;
const CANCEL = /* GraphQL */ `
  mutation ($runId: ID!) { cancelRun(input: { runId: $runId }) { __typename ... on CancelRunSuccess { run { status } } } }
`;
const RUNS_AND_CHECKPOINTS = /* GraphQL */ `
  query ($id: ID!) {
    conversation(id: $id) {
      messages { content }
      runs(first: 10) { edges { node { id status checkpoints { id run { id } } } } }
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

    it("ENQUEUE: the message waits QUEUED behind the active run and runs after it, in the order sent, each with its own checkpoints", async () => {
      const { conversationId, busyRunId } = await busyConversation();
      const queue = async (message: string) => {
        const started = (await gqlOk(app.url, START, { message, conversationId, multitask: "ENQUEUE" })).startRun;
        expect(started.__typename).toBe("StartRunSuccess");
        return started.run.id as string;
      };
      const second = await queue("Second.");
      const third = await queue("Third.");
      const dropped = await queue("Never mind.");
      for (const [i, id] of [second, third, dropped].entries()) {
        const { run } = await gqlOk(app.url, QUEUED_RUN, { id });
        expect(run).toMatchObject({ status: "QUEUED", queueReason: "BEHIND_ACTIVE_RUN" });
        expect(run.queuePosition).toBe(i + 1);
      }
      // The running run stays the conversation's active run; REJECT still refuses, naming it.
      expect((await gqlOk(app.url, ACTIVE, { id: conversationId })).conversation.activeRun).toEqual({ id: busyRunId });
      expect((await gqlOk(app.url, START, { message: "Now!", conversationId })).startRun).toMatchObject({
        __typename: "RunInProgressError",
        activeRunId: busyRunId,
      });
      // A run waiting in line is cancelled at once and never runs.
      expect((await gqlOk(app.url, CANCEL, { runId: dropped })).cancelRun).toEqual({ __typename: "CancelRunSuccess", run: { status: "CANCELLED" } });
      expect((await gqlOk(app.url, QUEUED_RUN, { id: third })).run.queuePosition).toBe(2);

      // The active run ends (here by its own cancel): the line moves, one run at a time.
      await app.services.runs.cancelRun({ runId: busyRunId }, LOCAL_PRINCIPAL);
      expect(await waitForRun(app.url, second)).toMatchObject({ status: "COMPLETED" });
      expect(await waitForRun(app.url, third)).toMatchObject({ status: "COMPLETED" });
      const { conversation } = await gqlOk(app.url, RUNS_AND_CHECKPOINTS, { id: conversationId });
      expect(conversation.messages.map((m: { content: string }) => m.content)).toEqual([
        "First turn.",
        "Echo: First turn.",
        "A long question.",
        "Second.",
        "Echo: Second.",
        "Third.",
        "Echo: Third.",
      ]);
      expect(fake.requests.filter((r) => r.messages.at(-1)?.content === "Never mind.")).toEqual([]);
      // The correlation edge: every checkpoint belongs to exactly the run that lists it; the queued runs wrote their own.
      const runs = conversation.runs.edges.map((e: any) => e.node);
      const byId = new Map(runs.map((r: any) => [r.id, r]));
      expect((byId.get(second) as any).checkpoints.length).toBeGreaterThan(0);
      expect((byId.get(third) as any).checkpoints.length).toBeGreaterThan(0);
      expect(byId.get(dropped) as any).toMatchObject({ status: "CANCELLED", checkpoints: [] });
      const seen = new Set<string>();
      for (const run of runs)
        for (const checkpoint of run.checkpoints) {
          expect(checkpoint.run).toEqual({ id: run.id });
          expect(seen.has(checkpoint.id)).toBe(false);
          seen.add(checkpoint.id);
        }
    });

    it("INTERRUPT: the active run (and any waiting behind it) ends CANCELLED with its partial output; the new one runs on the thread it left", async () => {
      const { conversationId, busyRunId } = await busyConversation();
      // A message already waiting in line is cancelled too: the new one goes now.
      const waiting = (await gqlOk(app.url, START, { message: "Later.", conversationId, multitask: "ENQUEUE" })).startRun;
      const next = (await gqlOk(app.url, START, { message: "Forget that.", conversationId, multitask: "INTERRUPT" })).startRun;
      expect(next.__typename).toBe("StartRunSuccess");
      expect(await waitForRun(app.url, next.run.id)).toMatchObject({ status: "COMPLETED" });
      expect((await gqlOk(app.url, QUEUED_RUN, { id: waiting.run.id })).run).toMatchObject({ status: "CANCELLED" });
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
