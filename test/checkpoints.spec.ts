// Checkpoints as GraphQL types: their fields, the conversation's connection
// (oldest first, cursors that survive new checkpoints), the run edges (a
// running run's open window, a checkpoint outside every window), node(id),
// CheckpointEvent.checkpoint on a long subscription, and the edge cases: a
// conversation with no runs and a deleted conversation.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AIMessage } from "@langchain/core/messages";
import { startFakeOllama, defaultResponder, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp, waitForRun } from "../testkit/app.ts";
import { collect, gql, gqlOk, sseClient, wsClient } from "../testkit/graphql.ts";
import { START_RUN } from "../testkit/documents.ts";
import { until } from "../testkit/streaming.ts";
import { buildChatGraph } from "../src/agent/chat-graph.ts";
import { threadConfig } from "../src/agent/runtime.ts";
import type { App } from "../src/app.ts";
import { openSqlite } from "../src/storage/sqlite/database.ts";
import { formatSqliteDate } from "../src/storage/sqlite/rows.ts";

let fake: FakeOllama;
let app: App & { databaseFile: string };

beforeAll(async () => {
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url, env: { RUN_HEARTBEAT_MS: "60000", RUN_LEASE_MS: "600000" } });
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});
beforeEach(() => fake.setResponder(defaultResponder));

async function turn(message: string, conversationId?: string) {
  const { startRun } = await gqlOk(app.url, START_RUN, { message, conversationId });
  expect(startRun.__typename).toBe("StartRunSuccess");
  const run = await waitForRun(app.url, startRun.run.id);
  return { runId: startRun.run.id as string, conversationId: startRun.conversation.id as string, run };
}

/** Appends a message the way an operator would: a LangGraph state update, outside any run. */
async function updateStateOutsideRuns(conversationId: string, text: string) {
  const graph = buildChatGraph({ systemPrompt: "", requireApproval: [], checkpointer: app.storage.saver });
  const config = await graph.updateState(threadConfig(conversationId), { messages: [new AIMessage({ content: text })] }, "agent");
  return String(config.configurable?.checkpoint_id);
}

const CHECKPOINT_FIELDS = /* GraphQL */ `
  id step source createdAt next messageCount
  lastMessage { id role content toolCalls { name args } toolCallId name }
  parent { id }
  run { id }
  conversation { id }
  writes { taskId channel idx value }
`;

const PAGE = /* GraphQL */ `
  query Page($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {
    conversation(id: $id) {
      checkpoints(first: $first, after: $after, last: $last, before: $before) {
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
        edges { cursor node { id step } }
      }
    }
  }
`;

describe("checkpoint fields", () => {
  it("describes each checkpoint of a tools turn: step, source, ts, next, messages, parent, writes, run", async () => {
    const { runId, conversationId, run } = await turn("Please calculate 17 * 3");
    const { conversation } = await gqlOk(
      app.url,
      `query($id: ID!) { conversation(id: $id) { checkpoints { edges { cursor node { ${CHECKPOINT_FIELDS} } } } } }`,
      { id: conversationId },
    );
    const nodes = conversation.checkpoints.edges.map((e: any) => e.node);
    expect(conversation.checkpoints.edges.map((e: any) => e.cursor)).toEqual(nodes.map((n: any) => n.id));
    expect(nodes.map((n: any) => [n.step, n.source, n.next, n.messageCount, n.lastMessage?.role ?? null])).toEqual([
      [-1, "INPUT", ["__start__"], 0, null],
      [0, "LOOP", ["agent"], 1, "USER"],
      [1, "LOOP", ["tools"], 2, "ASSISTANT"],
      [2, "LOOP", ["agent"], 3, "TOOL"],
      [3, "LOOP", [], 4, "ASSISTANT"],
    ]);
    expect(nodes[2].lastMessage.toolCalls).toEqual([{ name: "calculator", args: { expression: "17 * 3" } }]);
    expect(nodes[3].lastMessage).toMatchObject({ role: "TOOL", content: "51", name: "calculator" });
    expect(nodes[4].lastMessage.content).toBe("The result is 51.");
    // A chain, each pointing at the one before; all in the run's window and conversation.
    expect(nodes.map((n: any) => n.parent?.id ?? null)).toEqual([null, ...nodes.slice(0, -1).map((n: any) => n.id)]);
    for (const node of nodes) {
      expect(node.run).toEqual({ id: runId });
      expect(node.conversation).toEqual({ id: conversationId });
      expect(Date.parse(node.createdAt)).toBeGreaterThanOrEqual(Date.parse(run.startedAt));
      expect(Date.parse(node.createdAt)).toBeLessThanOrEqual(Date.parse(run.finishedAt));
    }
    expect([...nodes].map((n: any) => n.id).sort()).toEqual(nodes.map((n: any) => n.id));
    // The writes of a checkpoint are what its tasks produced: the input, the model's reply and
    // the tool call it sends as a task of its own (LangGraph's __pregel_tasks), the tool's message.
    expect(nodes[0].writes.map((w: any) => w.channel)).toEqual(["messages", "branch:to:agent"]);
    expect(nodes[0].writes[0].value[0].kwargs.content).toBe("Please calculate 17 * 3");
    expect(nodes[1].writes.map((w: any) => [w.channel, w.idx])).toEqual([
      ["messages", 0],
      ["__pregel_tasks", 1],
    ]);
    expect(nodes[4].writes).toEqual([]);

    const { run: read } = await gqlOk(
      app.url,
      `query($id: ID!) { run(id: $id) { checkpoints { id } failedTasks { taskId } messages { role content toolCalls { name } toolCallId } } }`,
      { id: runId },
    );
    expect(read.checkpoints.map((c: any) => c.id)).toEqual(nodes.map((n: any) => n.id));
    expect(read.failedTasks).toEqual([]);
    expect(read.messages.map((m: any) => [m.role, m.content])).toEqual([
      ["USER", "Please calculate 17 * 3"],
      ["ASSISTANT", ""],
      ["TOOL", "51"],
      ["ASSISTANT", "The result is 51."],
    ]);
  });

  it("records a failed task as an __error__ write on the checkpoint it ran from", async () => {
    fake.enqueue({ kind: "errorLine", error: "out of memory" });
    const { runId, conversationId } = await turn("This one fails");
    const { run } = await gqlOk(
      app.url,
      `query($id: ID!) { run(id: $id) { status failedTasks { taskId node message checkpoint { id next writes { taskId channel idx value } } } } }`,
      { id: runId },
    );
    expect(run.status).toBe("FAILED");
    expect(run.failedTasks).toHaveLength(1);
    const [task] = run.failedTasks;
    expect(task).toMatchObject({ node: "agent", message: "out of memory" });
    expect(task.checkpoint.next).toEqual(["agent"]);
    expect(task.checkpoint.writes).toEqual([{ taskId: task.taskId, channel: "__error__", idx: -1, value: { message: "out of memory", name: "Error" } }]);
    const { conversation } = await gqlOk(app.url, `query($id: ID!) { conversation(id: $id) { next resumable } }`, { id: conversationId });
    expect(conversation).toEqual({ next: ["agent"], resumable: true });
  });
});

describe("the checkpoints connection", () => {
  it("pages oldest first, forwards and backwards, and cursors stay valid as checkpoints arrive", async () => {
    const { conversationId } = await turn("First question");
    await turn("Second question", conversationId);
    const all = (await gqlOk(app.url, PAGE, { id: conversationId, first: 100 })).conversation.checkpoints;
    const ids = all.edges.map((e: any) => e.node.id);
    expect(ids).toHaveLength(6);
    expect(all.pageInfo).toEqual({ hasNextPage: false, hasPreviousPage: false, startCursor: ids[0], endCursor: ids[5] });
    expect(all.edges.map((e: any) => e.node.step)).toEqual([-1, 0, 1, 2, 3, 4]);

    const page1 = (await gqlOk(app.url, PAGE, { id: conversationId, first: 4 })).conversation.checkpoints;
    expect(page1.edges.map((e: any) => e.node.id)).toEqual(ids.slice(0, 4));
    expect(page1.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false, endCursor: ids[3] });

    // New checkpoints arrive between two pages: the cursor still points where it did.
    await turn("Third question", conversationId);
    const page2 = (await gqlOk(app.url, PAGE, { id: conversationId, first: 4, after: page1.pageInfo.endCursor })).conversation.checkpoints;
    expect(page2.edges.map((e: any) => e.node.id).slice(0, 2)).toEqual(ids.slice(4));
    expect(page2.edges.map((e: any) => e.node.step)).toEqual([3, 4, 5, 6]);
    expect(page2.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: true });
    const page3 = (await gqlOk(app.url, PAGE, { id: conversationId, first: 4, after: page2.pageInfo.endCursor })).conversation.checkpoints;
    expect(page3.edges.map((e: any) => e.node.step)).toEqual([7]);
    expect(page3.pageInfo.hasNextPage).toBe(false);

    // Backwards: the last ones, still oldest first within the page.
    const tail = (await gqlOk(app.url, PAGE, { id: conversationId, last: 2 })).conversation.checkpoints;
    expect(tail.edges.map((e: any) => e.node.step)).toEqual([6, 7]);
    expect(tail.pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: false });
    const before = (await gqlOk(app.url, PAGE, { id: conversationId, last: 3, before: tail.pageInfo.startCursor })).conversation.checkpoints;
    expect(before.edges.map((e: any) => e.node.step)).toEqual([3, 4, 5]);
    expect(before.pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: true });
    const between = (await gqlOk(app.url, PAGE, { id: conversationId, after: ids[1], before: ids[4] })).conversation.checkpoints;
    expect(between.edges.map((e: any) => e.node.id)).toEqual(ids.slice(2, 4));
    expect((await gqlOk(app.url, PAGE, { id: conversationId, first: 0 })).conversation.checkpoints.edges).toEqual([]);
  });

  it("refuses bad arguments with a VALIDATION error", async () => {
    const { conversationId } = await turn("Validation please");
    for (const [variables, field] of [
      [{ first: -1 }, undefined],
      [{ last: -5 }, undefined],
      [{ first: 2, last: 2 }, "last"],
      [{ after: "not-a-cursor" }, "after"],
      [{ before: "' OR 1=1 --" }, "before"],
    ] as const) {
      const result = await gql(app.url, PAGE, { id: conversationId, ...variables });
      expect(result.data?.conversation ?? null).toBeNull();
      expect(result.errors?.[0]?.extensions).toMatchObject(field ? { code: "VALIDATION", field } : { code: "VALIDATION" });
    }
  });

  it("gives a conversation with no runs an empty connection, and a state update's checkpoint no run", async () => {
    const id = randomUUID();
    // A conversation made outside the API (an import), with no runs.
    const db = openSqlite(app.databaseFile);
    const now = formatSqliteDate(new Date());
    db.prepare("INSERT INTO conversations (id, title, created_at, updated_at, message_count) VALUES (?, 'Imported', ?, ?, 0)").run(id, now, now);
    db.close();
    const empty = await gqlOk(
      app.url,
      `query($id: ID!) { conversation(id: $id) { checkpoints { edges { node { id } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } runs { totalCount } } }`,
      { id },
    );
    expect(empty.conversation).toEqual({
      checkpoints: { edges: [], pageInfo: { hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null } },
      runs: { totalCount: 0 },
    });
    const checkpointId = await updateStateOutsideRuns(id, "Imported from elsewhere.");
    const { conversation } = await gqlOk(
      app.url,
      `query($id: ID!) { conversation(id: $id) { checkpoints { edges { node { id source run { id } lastMessage { content } } } } } }`,
      { id },
    );
    expect(conversation.checkpoints.edges.map((e: any) => e.node)).toEqual([
      { id: checkpointId, source: "UPDATE", run: null, lastMessage: { content: "Imported from elsewhere." } },
    ]);
  });
});

describe("the run edges", () => {
  it("holds a running run's checkpoints in its open window", async () => {
    fake.enqueue({ kind: "silence", tokens: ["Let me think"] });
    const { startRun } = await gqlOk(app.url, START_RUN, { message: "A slow answer" });
    const runId = startRun.run.id;
    const query = `query($id: ID!) { run(id: $id) { status finishedAt checkpoints { id step source run { id status } } messages { role content } } }`;
    let run: any;
    for (let i = 0; i < 400; i += 1) {
      run = (await gqlOk(app.url, query, { id: runId })).run;
      if (run.checkpoints.length >= 2) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(run.status).toBe("RUNNING");
    expect(run.finishedAt).toBeNull();
    expect(run.checkpoints.map((c: any) => [c.step, c.source, c.run])).toEqual([
      [-1, "INPUT", { id: runId, status: "RUNNING" }],
      [0, "LOOP", { id: runId, status: "RUNNING" }],
    ]);
    expect(run.messages).toEqual([{ role: "USER", content: "A slow answer" }]);
    const { cancelRun } = await gqlOk(app.url, `mutation($id: ID!) { cancelRun(input: { runId: $id }) { __typename } }`, { id: runId });
    expect(cancelRun.__typename).toBe("CancelRunSuccess");
    const after = (await gqlOk(app.url, query, { id: runId })).run;
    expect(after.status).toBe("CANCELLED");
    expect(after.checkpoints.map((c: any) => c.id)).toEqual(run.checkpoints.map((c: any) => c.id));
  });

  it("gives a checkpoint written outside every run's window no run, and its message to no run", async () => {
    const { runId, conversationId } = await turn("Before the note");
    const noteId = await updateStateOutsideRuns(conversationId, "A note added by an operator.");
    const { runId: laterRunId } = await turn("After the note", conversationId);
    const { conversation } = await gqlOk(
      app.url,
      `query($id: ID!) { conversation(id: $id) {
         checkpoints { edges { node { id source run { id } } } }
         runs { edges { node { id checkpoints { id } messages { content } } } }
       } }`,
      { id: conversationId },
    );
    const nodes = conversation.checkpoints.edges.map((e: any) => e.node);
    expect(nodes.find((n: any) => n.id === noteId)).toEqual({ id: noteId, source: "UPDATE", run: null });
    expect(nodes.filter((n: any) => n.run === null)).toHaveLength(1);
    const runs = conversation.runs.edges.map((e: any) => e.node);
    expect(runs.map((r: any) => r.id)).toEqual([runId, laterRunId]);
    expect(runs.flatMap((r: any) => r.checkpoints.map((c: any) => c.id))).not.toContain(noteId);
    expect(runs.map((r: any) => r.messages.map((m: any) => m.content))).toEqual([
      ["Before the note", "Echo: Before the note"],
      ["After the note", "Echo: After the note"],
    ]);
  });

  it("resolves checkpoints with node(id), and forgets them with their deleted conversation", async () => {
    const { conversationId } = await turn("To be deleted");
    const { conversation } = await gqlOk(app.url, `query($id: ID!) { conversation(id: $id) { checkpoints { edges { node { id } } } } }`, {
      id: conversationId,
    });
    const checkpointId = conversation.checkpoints.edges[0].node.id;
    const NODE = `query($id: ID!) { node(id: $id) { __typename id ... on Checkpoint { step conversation { id } } } }`;
    expect((await gqlOk(app.url, NODE, { id: checkpointId })).node).toEqual({
      __typename: "Checkpoint",
      id: checkpointId,
      step: -1,
      conversation: { id: conversationId },
    });

    const deleted = await gqlOk(app.url, `mutation($id: ID!) { deleteConversation(input: { conversationId: $id }) { __typename } }`, { id: conversationId });
    expect(deleted.deleteConversation.__typename).toBe("DeleteConversationSuccess");
    expect((await gqlOk(app.url, NODE, { id: checkpointId })).node).toBeNull();
    expect((await gqlOk(app.url, `query($id: ID!) { conversation(id: $id) { id } }`, { id: conversationId })).conversation).toBeNull();
    expect((await gqlOk(app.url, NODE, { id: "not a checkpoint id" })).node).toBeNull();
  });
});

describe("CheckpointEvent.checkpoint", () => {
  const EVENTS = /* GraphQL */ `
    subscription($id: ID!) {
      conversationEvents(conversationId: $id) {
        __typename runId
        ... on CheckpointEvent { checkpointId checkpoint { id step messageCount run { id status } } }
      }
    }
  `;

  it("resolves each event's checkpoint fresh on a subscription that spans runs", async () => {
    const { conversationId } = await turn("Opening message");
    const client = wsClient(app.url);
    const before = app.services.bus.stats().conversationSubscribers;
    const sub = collect(client, EVENTS, { id: conversationId });
    try {
      // The subscription is on the bus before the runs start (a fixed wait can be too short on a loaded machine).
      await until(() => app.services.bus.stats().conversationSubscribers > before, "the subscription on the bus");
      const second = await turn("Second", conversationId);
      const third = await turn("Third", conversationId);
      for (let i = 0; i < 200 && sub.results.filter((r) => r.conversationEvents.__typename === "CheckpointEvent").length < 6; i += 1) {
        await new Promise((r) => setTimeout(r, 10));
      }
      const checkpoints = sub.results.map((r) => r.conversationEvents).filter((e) => e.__typename === "CheckpointEvent");
      expect(checkpoints.map((e) => [e.runId, e.checkpoint.id, e.checkpoint.step, e.checkpoint.messageCount, e.checkpoint.run.id])).toEqual([
        [second.runId, checkpoints[0].checkpointId, 2, 2, second.runId],
        [second.runId, checkpoints[1].checkpointId, 3, 3, second.runId],
        [second.runId, checkpoints[2].checkpointId, 4, 4, second.runId],
        [third.runId, checkpoints[3].checkpointId, 5, 4, third.runId],
        [third.runId, checkpoints[4].checkpointId, 6, 5, third.runId],
        [third.runId, checkpoints[5].checkpointId, 7, 6, third.runId],
      ]);
    } finally {
      sub.dispose();
      await client.dispose();
    }
  });

  it("carries the checkpoint over SSE too", async () => {
    fake.enqueue({ kind: "text", tokens: ["Slow", " reply"], delayMs: 20 });
    const { startRun } = await gqlOk(app.url, START_RUN, { message: "Over SSE" });
    const client = sseClient(app.url);
    const sub = collect(
      client,
      `subscription($id: ID!) { runEvents(runId: $id) { __typename ... on CheckpointEvent { checkpointId checkpoint { id source next run { id } } } } }`,
      {
        id: startRun.run.id,
      },
    );
    const events = (await sub.done).map((r: any) => r.runEvents).filter((e: any) => e.__typename === "CheckpointEvent");
    client.dispose();
    expect(events.map((e: any) => [e.checkpoint.id === e.checkpointId, e.checkpoint.source, e.checkpoint.next, e.checkpoint.run.id])).toEqual([
      [true, "INPUT", ["__start__"], startRun.run.id],
      [true, "LOOP", ["agent"], startRun.run.id],
      [true, "LOOP", [], startRun.run.id],
    ]);
  });
});
