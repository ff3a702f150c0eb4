// The API on every deployment: the same GraphQL requests and subscriptions,
// over graphql-ws and SSE, must give the same answers whichever backends hold
// the state and carry the events. Every mutation, status and event type of the
// contract appears here, so a new backend is held to all of them.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultResponder, startFakeOllama, type FakeOllama } from "../support/fake-ollama.ts";
import { startTestApp, waitForRun } from "../support/app.ts";
import { collect, gql, gqlOk, RESUME_RUN, RUN_EVENTS, START_RUN, CONVERSATION } from "../support/graphql.ts";
import { CONVERSATIONS_CHANGED, TRANSPORTS, until } from "../support/streaming.ts";
import type { App } from "../../src/app.ts";

/** A deployment: the environment that selects its backends, and what to clean up after. */
export interface Deployment {
  name: string;
  env(): Promise<{ env: Record<string, string>; cleanup(): Promise<void> }>;
}

const CANCEL_RUN = /* GraphQL */ `
  mutation Cancel($runId: ID!) {
    cancelRun(input: { runId: $runId }) { __typename ... on CancelRunSuccess { run { id status errorCode } } ... on Error { code message } }
  }
`;
const RENAME = /* GraphQL */ `
  mutation Rename($id: ID!, $title: String!) {
    renameConversation(input: { conversationId: $id, title: $title }) { __typename ... on RenameConversationSuccess { conversation { id title } } ... on Error { code } }
  }
`;
const DELETE = /* GraphQL */ `
  mutation Delete($id: ID!) {
    deleteConversation(input: { conversationId: $id }) { __typename ... on DeleteConversationSuccess { conversationId } ... on Error { code } }
  }
`;
const CORRELATION = /* GraphQL */ `
  query Correlation($id: ID!) {
    conversation(id: $id) {
      next resumable messageCount
      checkpoints(first: 100) { edges { node { id step source next messageCount run { id } lastMessage { role } } } }
      runs(first: 20) { totalCount edges { node { id kind status errorCode checkpoints { id } messages { role content } failedTasks { node message checkpoint { id } } } } }
    }
  }
`;
const NODE = /* GraphQL */ `query Node($id: ID!) { node(id: $id) { __typename id } }`;
const LIST = /* GraphQL */ `
  query List($first: Int, $after: String) { conversations(first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } edges { node { id title latestRun { status } } } } }
`;

export function describeApiConformance(deployment: Deployment) {
  describe(`the API on ${deployment.name}`, () => {
    let fake: FakeOllama;
    let app: App;
    let cleanup: () => Promise<void> = async () => {};

    beforeAll(async () => {
      fake = await startFakeOllama();
      const selected = await deployment.env();
      cleanup = selected.cleanup;
      app = await startTestApp({ ollamaUrl: fake.url, env: { RUN_HEARTBEAT_MS: "200", RUN_LEASE_MS: "2000", ...selected.env } });
    }, 60_000);
    afterAll(async () => {
      await app?.close();
      await cleanup();
      await fake?.close();
    });

    const start = async (message: string, conversationId?: string) => {
      const { startRun } = await gqlOk(app.url, START_RUN, { message, conversationId });
      expect(startRun.__typename).toBe("StartRunSuccess");
      return { runId: startRun.run.id as string, conversationId: startRun.conversation.id as string };
    };

    it("streams a run with a tool call to subscribers on both transports, then answers queries from what it stored", async () => {
      const { runId, conversationId } = await start("Please calculate 17 * 3");
      const [overWs, overSse] = await Promise.all(TRANSPORTS.map(({ client }) => collect(client(app.url), RUN_EVENTS, { runId }).done));
      const events = overWs!.map((r) => r.runEvents);
      expect(overSse!.map((r) => r.runEvents)).toEqual(events);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      const types = events.map((e) => e.__typename);
      for (const type of ["RunStatusEvent", "ToolCallEvent", "ToolResultEvent", "TokenEvent"]) expect(types).toContain(type);
      expect(events.find((e) => e.__typename === "ToolCallEvent")).toMatchObject({ name: "calculator", args: { expression: "17 * 3" } });
      expect(events.find((e) => e.__typename === "ToolResultEvent")).toMatchObject({ content: "51", isError: false });
      expect(events.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "COMPLETED", errorCode: null });

      const { conversation } = await gqlOk(app.url, CONVERSATION, { id: conversationId });
      expect(conversation).toMatchObject({ title: "Please calculate 17 * 3", next: [], resumable: false, activeRun: null, latestRun: { id: runId, status: "COMPLETED" } });
      expect(conversation.messages.map((m: any) => m.role)).toEqual(["USER", "ASSISTANT", "TOOL", "ASSISTANT"]);
      expect(conversation.messages.at(-1).content).toBe("The result is 51.");
      expect(conversation.messageCount).toBe(4);
      const { conversation: correlated } = await gqlOk(app.url, CORRELATION, { id: conversationId });
      const checkpoints = correlated.checkpoints.edges.map((e: any) => e.node);
      expect(checkpoints.map((c: any) => c.source)).toEqual(["input", "loop", "loop", "loop", "loop"].map((s) => s.toUpperCase()));
      for (const checkpoint of checkpoints) expect(checkpoint.run).toEqual({ id: runId });
      const [run] = correlated.runs.edges.map((e: any) => e.node);
      expect(run.checkpoints.map((c: any) => c.id)).toEqual(checkpoints.map((c: any) => c.id));
      expect(run.messages.map((m: any) => m.role)).toEqual(["USER", "ASSISTANT", "TOOL", "ASSISTANT"]);
      for (const [id, type] of [[conversationId, "Conversation"], [runId, "Run"], [checkpoints[0].id, "Checkpoint"]]) {
        expect((await gqlOk(app.url, NODE, { id })).node).toEqual({ __typename: type, id });
      }
    });

    it("records a failed step against the failed run, and a resume that completes it", async () => {
      fake.enqueue({ kind: "errorLine", tokens: ["Par", "tial "], error: "the model broke" });
      const { runId, conversationId } = await start("This one fails first.");
      expect(await waitForRun(app.url, runId)).toMatchObject({ status: "FAILED", errorCode: "MODEL_ERROR", errorMessage: "the model broke", partialOutput: "Partial " });
      const failed = (await gqlOk(app.url, CORRELATION, { id: conversationId })).conversation;
      expect(failed).toMatchObject({ next: ["agent"], resumable: true });
      expect(failed.runs.edges[0].node.failedTasks).toEqual([{ node: "agent", message: "the model broke", checkpoint: { id: expect.any(String) } }]);

      const { resumeRun } = await gqlOk(app.url, RESUME_RUN, { conversationId });
      expect(resumeRun.run).toMatchObject({ kind: "RESUME", status: "RUNNING", input: null });
      expect(await waitForRun(app.url, resumeRun.run.id)).toMatchObject({ status: "COMPLETED" });
      const done = (await gqlOk(app.url, CORRELATION, { id: conversationId })).conversation;
      expect(done).toMatchObject({ next: [], resumable: false });
      const runs = done.runs.edges.map((e: any) => e.node);
      expect(runs.map((r: any) => [r.kind, r.status, r.errorCode])).toEqual([["START", "FAILED", "MODEL_ERROR"], ["RESUME", "COMPLETED", null]]);
      expect(runs[0].failedTasks).toHaveLength(1);
      expect(runs[1].failedTasks).toEqual([]);
      expect(runs[1].checkpoints).toHaveLength(1);
      expect(runs[1].messages.map((m: any) => m.content)).toEqual(["Echo: This one fails first."]);
      expect((await gqlOk(app.url, RESUME_RUN, { conversationId })).resumeRun).toMatchObject({ __typename: "NothingToResumeError", code: "NOTHING_TO_RESUME" });
    });

    it("cancels a running run, refuses a second start meanwhile, and keeps its step resumable", async () => {
      fake.enqueue({ kind: "silence", tokens: ["Working "] });
      const { runId, conversationId } = await start("Take your time.");
      await until(() => fake.openChatRequests() > 0, "the model request");
      const second = (await gqlOk(app.url, START_RUN, { message: "and another", conversationId })).startRun;
      expect(second).toMatchObject({ __typename: "RunInProgressError", code: "RUN_IN_PROGRESS", activeRunId: runId });
      expect((await gql(app.url, DELETE, { id: conversationId })).data.deleteConversation.__typename).toBe("RunInProgressError");
      const { cancelRun } = await gqlOk(app.url, CANCEL_RUN, { runId });
      expect(cancelRun).toMatchObject({ __typename: "CancelRunSuccess", run: { id: runId, status: "CANCELLED", errorCode: "CANCELLED" } });
      expect(await waitForRun(app.url, runId)).toMatchObject({ status: "CANCELLED", partialOutput: "Working " });
      expect((await gqlOk(app.url, CANCEL_RUN, { runId })).cancelRun.__typename).toBe("RunNotActiveError");
      expect((await gqlOk(app.url, CONVERSATION, { id: conversationId })).conversation).toMatchObject({ resumable: true, next: ["agent"] });
    });

    it("tells conversationsChanged subscribers of creations, renames and deletions, on both transports", async () => {
      const { runId, conversationId } = await start("Soon renamed.");
      await waitForRun(app.url, runId);
      for (const { client } of TRANSPORTS) {
        const stream = collect(client(app.url), CONVERSATIONS_CHANGED);
        await new Promise((resolve) => setTimeout(resolve, 100));
        const title = `Renamed ${randomUUID().slice(0, 4)}`;
        expect((await gqlOk(app.url, RENAME, { id: conversationId, title })).renameConversation.__typename).toBe("RenameConversationSuccess");
        await until(() => stream.results.some((r) => r.conversationsChanged.title === title), "the rename notice");
        stream.dispose();
      }
      const stream = collect(TRANSPORTS[0]!.client(app.url), CONVERSATIONS_CHANGED);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await gqlOk(app.url, DELETE, { id: conversationId })).deleteConversation).toEqual({ __typename: "DeleteConversationSuccess", conversationId });
      const notice = (await until(() => stream.results.find((r) => r.conversationsChanged.deleted), "the deletion notice")).conversationsChanged;
      expect(notice).toMatchObject({ id: conversationId, deleted: true, activeRun: null, latestRun: null });
      stream.dispose();
      expect((await gqlOk(app.url, CONVERSATION, { id: conversationId })).conversation).toBeNull();
      expect((await gqlOk(app.url, NODE, { id: runId })).node).toBeNull();
    });

    it("pages the conversation list newest first, and exports a conversation with each checkpoint's run", async () => {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const { runId, conversationId } = await start(`list ${i}`);
        await waitForRun(app.url, runId);
        ids.push(conversationId);
      }
      const first = (await gqlOk(app.url, LIST, { first: 2 })).conversations;
      expect(first.edges.map((e: any) => e.node.id)).toEqual([ids[2], ids[1]]);
      expect(first.pageInfo.hasNextPage).toBe(true);
      const second = (await gqlOk(app.url, LIST, { first: 1, after: first.pageInfo.endCursor })).conversations;
      expect(second.edges.map((e: any) => e.node.id)).toEqual([ids[0]]);
      expect(second.totalCount).toBe(first.totalCount);

      const response = await fetch(`${app.url}/api/conversations/${ids[0]}/export?format=jsonl`);
      const lines = (await response.text()).trim().split("\n").map((l) => JSON.parse(l));
      expect(lines.map((l) => l.source)).toEqual(["input", "loop", "loop"]);
      const { conversation } = await gqlOk(app.url, CORRELATION, { id: ids[0] });
      const runId = conversation.runs.edges[0].node.id;
      for (const line of lines) expect(line.run_id).toBe(runId);
      expect(lines.at(-1)).toMatchObject({ message_count: 2, last_message: { role: "assistant", content: "Echo: list 0" } });
      fake.setResponder(defaultResponder);
    });
  });
}
