// The core API in one process: starting, reading, renaming and deleting
// conversations; typed refusals that write nothing; the tools loop; the system
// prompt; subscriptions over graphql-ws and SSE.
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import Database from "better-sqlite3";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp, waitForRun } from "../testkit/app.ts";
import { snapshotDatabase } from "../testkit/db-snapshot.ts";
import { collect, gql, gqlOk, sseClient, startRun, wsClient } from "../testkit/graphql.ts";
import { CONVERSATION, RESUME_RUN, RUN, RUN_EVENTS, START_RUN } from "../testkit/documents.ts";
import { titleFromMessage } from "../src/runs/service.ts";
import type { App } from "../src/app.ts";

let fake: FakeOllama;
let app: App & { databaseFile: string };

beforeAll(async () => {
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url, env: { MAX_MESSAGE_CHARS: "200", SYSTEM_PROMPT: "You are runledger's test agent.", EVENT_GRACE_MS: "0" } });
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});
beforeEach(() => {
  fake.setResponder((request) => {
    throw new Error(`unexpected model call: ${JSON.stringify(request.messages.at(-1))}`);
  });
});

/** Lets the default fake responder answer. */
async function useDefaultModel() {
  const { defaultResponder } = await import("../testkit/fake-ollama.ts");
  fake.setResponder(defaultResponder);
}

describe("titles", () => {
  it("takes the first line of the trimmed message, cut to 50 characters plus ...", () => {
    expect(titleFromMessage("  Hello there  \nsecond line")).toBe("Hello there");
    expect(titleFromMessage("x".repeat(50))).toBe("x".repeat(50));
    expect(titleFromMessage("y".repeat(51))).toBe("y".repeat(50) + "...");
    expect(titleFromMessage("\n\n  first real line\nmore")).toBe("first real line");
    // Characters, not UTF-16 code units: an emoji is never cut in half.
    expect(titleFromMessage("😀".repeat(60))).toBe("😀".repeat(50) + "...");
  });

  it("names a new conversation from its first message", async () => {
    await useDefaultModel();
    const { conversation, run } = await startRun(app.url, "   What is the tallest mountain on Earth, and how was it first measured?\nThanks");
    expect(conversation.title).toBe("What is the tallest mountain on Earth, and how was...");
    await waitForRun(app.url, run.id);
  });
});

describe("a turn with the tools loop", () => {
  it("calls the calculator, answers with its result, and keeps the system prompt out of the thread", async () => {
    await useDefaultModel();
    const before = fake.requests.length;
    const { run, conversation } = await startRun(app.url, "Please calculate (17 + 4) * 2");
    expect((await waitForRun(app.url, run.id)).status).toBe("COMPLETED");

    const data = await gqlOk(app.url, CONVERSATION, { id: conversation.id });
    const messages = data.conversation.messages;
    expect(messages.map((m: any) => m.role)).toEqual(["USER", "ASSISTANT", "TOOL", "ASSISTANT"]);
    expect(messages[1].toolCalls).toEqual([{ id: expect.any(String), name: "calculator", args: { expression: "(17 + 4) * 2" } }]);
    expect(messages[2]).toMatchObject({ content: "42", name: "calculator", toolCallId: messages[1].toolCalls[0].id });
    expect(messages[3].content).toBe("The result is 42.");
    expect(data.conversation.messageCount).toBe(4);

    // Two model calls, each with the system prompt first; the thread never stores it.
    const calls = fake.requests.slice(before);
    expect(calls).toHaveLength(2);
    for (const call of calls) expect(call.messages[0]).toMatchObject({ role: "system", content: "You are runledger's test agent." });
    const db = new Database(app.databaseFile, { readonly: true });
    const blobs = db.prepare("SELECT CAST(checkpoint AS TEXT) AS c FROM checkpoints WHERE thread_id = ?").all(conversation.id) as { c: string }[];
    db.close();
    expect(blobs.length).toBeGreaterThan(0);
    for (const { c } of blobs) expect(c).not.toContain("runledger's test agent");
  });

  it("turns a tool error into a tool message, not a failed run", async () => {
    await useDefaultModel();
    const { run, conversation } = await startRun(app.url, "Please calculate 1 / 0");
    expect((await waitForRun(app.url, run.id)).status).toBe("COMPLETED");
    const { conversation: c } = await gqlOk(app.url, CONVERSATION, { id: conversation.id });
    expect(c.messages[2].role).toBe("TOOL");
    expect(c.messages[2].content).toMatch(/division by zero/);
  });
});

describe("reads", () => {
  it("never call the model", async () => {
    await useDefaultModel();
    const { run, conversation } = await startRun(app.url, "Hello reader");
    await waitForRun(app.url, run.id);
    fake.setResponder(() => {
      throw new Error("a read called the model");
    });
    const before = fake.requests.length;
    const data = await gqlOk(app.url, CONVERSATION, { id: conversation.id });
    expect(data.conversation.messages.map((m: any) => m.content)).toEqual(["Hello reader", "Echo: Hello reader"]);
    await gqlOk(app.url, `{ conversations(first: 5) { edges { node { id messages { id } next resumable } } } }`);
    expect(fake.requests.length).toBe(before);
  });

  it("node(id) finds conversations and runs", async () => {
    await useDefaultModel();
    const { run, conversation } = await startRun(app.url, "Find me by id");
    await waitForRun(app.url, run.id);
    const q = `query($id: ID!) { node(id: $id) { __typename id } }`;
    expect((await gqlOk(app.url, q, { id: conversation.id })).node).toEqual({ __typename: "Conversation", id: conversation.id });
    expect((await gqlOk(app.url, q, { id: run.id })).node).toEqual({ __typename: "Run", id: run.id });
    expect((await gqlOk(app.url, q, { id: "00000000-0000-4000-8000-000000000000" })).node).toBeNull();
  });

  it("lists conversations newest updatedAt first, in pages", async () => {
    await useDefaultModel();
    const a = await startRun(app.url, "ordering A");
    await waitForRun(app.url, a.run.id);
    const b = await startRun(app.url, "ordering B");
    await waitForRun(app.url, b.run.id);
    const page = `query($first: Int, $after: String) { conversations(first: $first, after: $after) {
      totalCount edges { cursor node { id title updatedAt } } pageInfo { hasNextPage endCursor } } }`;
    let first = (await gqlOk(app.url, page, { first: 2 })).conversations;
    expect(first.edges.map((e: any) => e.node.id)).toEqual([b.conversation.id, a.conversation.id]);

    // A new turn on A moves it to the top.
    const next = await startRun(app.url, "ordering A again", a.conversation.id);
    await waitForRun(app.url, next.run.id);
    first = (await gqlOk(app.url, page, { first: 2 })).conversations;
    expect(first.edges.map((e: any) => e.node.id)).toEqual([a.conversation.id, b.conversation.id]);
    expect(first.pageInfo.hasNextPage).toBe(first.totalCount > 2);

    // Walking every page gives every conversation once, in order.
    const seen: { id: string; updatedAt: string }[] = [];
    let after: string | null = null;
    do {
      const data: any = (await gqlOk(app.url, page, { first: 3, after })).conversations;
      seen.push(...data.edges.map((e: any) => e.node));
      after = data.pageInfo.hasNextPage ? data.pageInfo.endCursor : null;
    } while (after);
    expect(seen).toHaveLength(first.totalCount);
    expect(new Set(seen.map((c) => c.id)).size).toBe(seen.length);
    const times = seen.map((c) => c.updatedAt);
    expect([...times].sort().reverse()).toEqual(times);
  });
});

describe("refusals are typed and write nothing", () => {
  const unknown = "00000000-0000-4000-8000-000000000000";

  async function refused(query: string, variables: Record<string, unknown>) {
    const before = snapshotDatabase(app.databaseFile);
    const result = await gql(app.url, query, variables);
    expect(result.errors).toBeUndefined();
    expect(snapshotDatabase(app.databaseFile)).toBe(before);
    return Object.values(result.data!)[0] as any;
  }

  it("startRun: blank, oversized, NUL, malformed or unknown conversation", async () => {
    expect(await refused(START_RUN, { message: "   \n\t " })).toMatchObject({ __typename: "ValidationError", code: "VALIDATION", field: "message" });
    expect(await refused(START_RUN, { message: "x".repeat(201) })).toMatchObject({ __typename: "ValidationError", field: "message" });
    expect(await refused(START_RUN, { message: "a\u0000b" })).toMatchObject({ __typename: "ValidationError", field: "message" });
    expect(await refused(START_RUN, { message: "hi", conversationId: "not-a-uuid" })).toMatchObject({ __typename: "ValidationError", field: "conversationId" });
    expect(await refused(START_RUN, { message: "hi", conversationId: unknown })).toMatchObject({ __typename: "NotFoundError", code: "NOT_FOUND" });
  });

  it("startRun while a run is active: RunInProgressError, enforced by the database", async () => {
    fake.setResponder(() => ({ kind: "silence" }));
    const { run, conversation } = await startRun(app.url, "slow one");
    // Once the run waits on the model it has stored its first steps and writes nothing more.
    await vi.waitFor(() => expect(fake.openChatRequests()).toBe(1));
    const second = await refused(START_RUN, { message: "too soon", conversationId: conversation.id });
    expect(second).toMatchObject({ __typename: "RunInProgressError", code: "RUN_IN_PROGRESS", activeRunId: run.id });
    const del = await refused(`mutation($id: ID!) { deleteConversation(input: { conversationId: $id }) { __typename ... on Error { code } } }`, {
      id: conversation.id,
    });
    expect(del).toMatchObject({ __typename: "RunInProgressError" });
    const cancel = await gqlOk(app.url, `mutation($id: ID!) { cancelRun(input: { runId: $id }) { __typename ... on CancelRunSuccess { run { status } } } }`, {
      id: run.id,
    });
    expect(cancel.cancelRun).toEqual({ __typename: "CancelRunSuccess", run: { status: "CANCELLED" } });

    // The index itself refuses a second running row, whatever the process.
    const db = new Database(app.databaseFile);
    try {
      db.prepare("UPDATE runs SET status = 'running' WHERE id = ?").run(run.id);
      expect(() =>
        db
          .prepare("INSERT INTO runs (id, conversation_id, kind, status, started_at, start_mark) VALUES (?, ?, 'start', 'running', ?, 'x')")
          .run("11111111-1111-4111-8111-111111111111", conversation.id, new Date().toISOString()),
      ).toThrow(/UNIQUE constraint failed: runs.conversation_id/);
      expect(() => db.prepare("UPDATE runs SET status = 'RUNNING' WHERE id = ?").run(run.id)).toThrow(/CHECK constraint failed/);
    } finally {
      db.prepare("UPDATE runs SET status = 'cancelled' WHERE id = ?").run(run.id);
      db.close();
    }
  });

  it("resumeRun with nothing pending: NothingToResumeError; unknown: NotFoundError", async () => {
    await useDefaultModel();
    const { run, conversation } = await startRun(app.url, "finish cleanly");
    await waitForRun(app.url, run.id);
    expect(await refused(RESUME_RUN, { conversationId: conversation.id })).toMatchObject({ __typename: "NothingToResumeError", code: "NOTHING_TO_RESUME" });
    expect(await refused(RESUME_RUN, { conversationId: unknown })).toMatchObject({ __typename: "NotFoundError" });
    expect(await refused(RESUME_RUN, { conversationId: "nope" })).toMatchObject({ __typename: "ValidationError" });
  });

  it("renameConversation and deleteConversation: validation and unknown ids", async () => {
    const rename = `mutation($id: ID!, $title: String!) { renameConversation(input: { conversationId: $id, title: $title }) {
      __typename ... on Error { code message } ... on RenameConversationSuccess { conversation { title } } } }`;
    const del = `mutation($id: ID!) { deleteConversation(input: { conversationId: $id }) { __typename ... on Error { code } } }`;
    expect(await refused(rename, { id: unknown, title: "x" })).toMatchObject({ __typename: "NotFoundError" });
    expect(await refused(rename, { id: "bad", title: "x" })).toMatchObject({ __typename: "ValidationError" });
    await useDefaultModel();
    const { run, conversation } = await startRun(app.url, "to be renamed");
    await waitForRun(app.url, run.id);
    expect(await refused(rename, { id: conversation.id, title: "   " })).toMatchObject({ __typename: "ValidationError" });
    expect(await refused(rename, { id: conversation.id, title: "z".repeat(201) })).toMatchObject({ __typename: "ValidationError" });
    expect(await refused(del, { id: unknown })).toMatchObject({ __typename: "NotFoundError" });

    const renamed = await gqlOk(app.url, rename, { id: conversation.id, title: "  Renamed  " });
    expect(renamed.renameConversation).toEqual({ __typename: "RenameConversationSuccess", conversation: { title: "Renamed" } });
  });

  it("a run query for an unknown id is null, and a malformed run id changes nothing", async () => {
    expect((await gqlOk(app.url, RUN, { id: unknown })).run).toBeNull();
    const cancel = `mutation($id: ID!) { cancelRun(input: { runId: $id }) { __typename ... on Error { code } } }`;
    expect(await refused(cancel, { id: "zzz" })).toMatchObject({ __typename: "ValidationError" });
    expect(await refused(cancel, { id: unknown })).toMatchObject({ __typename: "NotFoundError" });
  });
});

describe("deleteConversation", () => {
  it("removes the conversation, its runs and its LangGraph thread", async () => {
    await useDefaultModel();
    const { run, conversation } = await startRun(app.url, "Please calculate 2 + 2");
    await waitForRun(app.url, run.id);
    const count = (sql: string) => {
      const db = new Database(app.databaseFile, { readonly: true });
      try {
        return (db.prepare(sql).get(conversation.id) as { n: number }).n;
      } finally {
        db.close();
      }
    };
    expect(count("SELECT COUNT(*) AS n FROM checkpoints WHERE thread_id = ?")).toBeGreaterThan(0);
    expect(count("SELECT COUNT(*) AS n FROM writes WHERE thread_id = ?")).toBeGreaterThan(0);
    const result = await gqlOk(
      app.url,
      `mutation($id: ID!) { deleteConversation(input: { conversationId: $id }) { __typename ... on DeleteConversationSuccess { conversationId } } }`,
      {
        id: conversation.id,
      },
    );
    expect(result.deleteConversation).toEqual({ __typename: "DeleteConversationSuccess", conversationId: conversation.id });
    expect(count("SELECT COUNT(*) AS n FROM conversations WHERE id = ?")).toBe(0);
    expect(count("SELECT COUNT(*) AS n FROM runs WHERE conversation_id = ?")).toBe(0);
    expect(count("SELECT COUNT(*) AS n FROM checkpoints WHERE thread_id = ?")).toBe(0);
    expect(count("SELECT COUNT(*) AS n FROM writes WHERE thread_id = ?")).toBe(0);
    expect((await gqlOk(app.url, CONVERSATION, { id: conversation.id })).conversation).toBeNull();
    expect((await gqlOk(app.url, RUN, { id: run.id })).run).toBeNull();
  });
});

describe("subscriptions", () => {
  const transports = [
    { name: "graphql-ws", client: () => wsClient(app.url) },
    { name: "graphql-sse", client: () => sseClient(app.url) },
  ];

  for (const transport of transports) {
    it(`${transport.name}: streams the run's tokens, then its terminal status, then completes`, async () => {
      const tokens = ["The ", "quick ", "brown ", "fox."];
      fake.setResponder(() => ({ kind: "text", tokens, delayMs: 20, firstDelayMs: 150 }));
      const { run } = await startRun(app.url, `stream over ${transport.name}`);
      const client = transport.client();
      try {
        const events = (await collect(client, RUN_EVENTS, { runId: run.id }).done).map((e: any) => e.runEvents);
        expect(events.map((e: any) => e.seq)).toEqual(events.map((_: unknown, i: number) => i + 1));
        expect(events[0]).toMatchObject({ __typename: "RunStatusEvent", status: "RUNNING" });
        expect(events.filter((e: any) => e.__typename === "TokenEvent").map((e: any) => e.text)).toEqual(tokens);
        expect(events.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "COMPLETED", errorCode: null });
        // The terminal event is sent after the outcome is committed.
        expect((await gqlOk(app.url, RUN, { id: run.id })).run.status).toBe("COMPLETED");
      } finally {
        await (client as { dispose: () => unknown }).dispose();
      }
    });

    it(`${transport.name}: a subscriber that arrives after the run finished gets exactly its terminal event`, async () => {
      await useDefaultModel();
      const { run } = await startRun(app.url, `late over ${transport.name}`);
      await waitForRun(app.url, run.id);
      await new Promise((r) => setTimeout(r, 20)); // EVENT_GRACE_MS=0: the database answers
      expect(await app.services.bus.subscribeRun(run.id)).toBeNull();
      const client = transport.client();
      try {
        const events = (await collect(client, RUN_EVENTS, { runId: run.id }).done).map((e: any) => e.runEvents);
        expect(events).toHaveLength(1);
        expect(events[0]).toMatchObject({ __typename: "RunStatusEvent", status: "COMPLETED", runId: run.id });
        expect(events[0].seq).toBeGreaterThan(1);
      } finally {
        await (client as { dispose: () => unknown }).dispose();
      }
    });
  }

  it("an unknown run id is a GraphQL error", async () => {
    const client = wsClient(app.url);
    try {
      await expect(collect(client, RUN_EVENTS, { runId: "00000000-0000-4000-8000-000000000000" }).done).rejects.toThrow(/does not exist/);
    } finally {
      await client.dispose();
    }
  });
});
