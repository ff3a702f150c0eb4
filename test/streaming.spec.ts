// Live events over both transports (graphql-ws and GraphQL over SSE), with the
// real clients against a real server port and the fake Ollama.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultResponder, startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp, waitForRun } from "../testkit/app.ts";
import { collect, gqlOk, startRun } from "../testkit/graphql.ts";
import { range, seqs, TRANSPORTS, until } from "../testkit/streaming.ts";
import { CONVERSATION_EVENTS, CONVERSATIONS_CHANGED, CONVERSATIONS_CHANGED_ROW, RUN_EVENTS } from "../testkit/documents.ts";
import { getNamedType, isLeafType, isNonNullType, type GraphQLObjectType } from "graphql";
import { schema } from "../src/schema/index.ts";
import type { App } from "../src/app.ts";

let fake: FakeOllama;
let app: App;

beforeAll(async () => {
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url });
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

const RENAME = /* GraphQL */ `
  mutation Rename($id: ID!, $title: String!) {
    renameConversation(input: { conversationId: $id, title: $title }) { __typename }
  }
`;
const DELETE = /* GraphQL */ `
  mutation Delete($id: ID!) {
    deleteConversation(input: { conversationId: $id }) { __typename }
  }
`;

/** The checks every complete run stream must pass: seq 1..n, RUNNING first, one terminal status last. */
function expectWholeRun(events: any[], runId: string, status = "COMPLETED") {
  expect(seqs(events)).toEqual(range(events.length));
  expect(events.every((e) => e.runId === runId)).toBe(true);
  expect(events[0]).toMatchObject({ __typename: "RunStatusEvent", status: "RUNNING" });
  expect(events.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status });
  expect(events.filter((e) => e.__typename === "RunStatusEvent")).toHaveLength(2);
}

describe.each(TRANSPORTS)("runEvents over $name", ({ client: connect }) => {
  it("streams every token in order, then the terminal status, then completes", async () => {
    const tokens = ["Hel", "lo", ", ", "wor", "ld", "!"];
    fake.enqueue({ kind: "text", tokens, delayMs: 15 });
    const { runId } = await startRun(app.url, "say hello");
    const client = connect(app.url);
    const events = (await collect(client, RUN_EVENTS, { runId }).done).map((r) => r.runEvents);
    await client.dispose();

    expectWholeRun(events, runId);
    const tokenEvents = events.filter((e) => e.__typename === "TokenEvent");
    expect(tokenEvents.map((e) => e.text)).toEqual(tokens);
    expect(tokenEvents.every((e) => e.node === "agent" && typeof e.messageId === "string")).toBe(true);
    expect(new Set(tokenEvents.map((e) => e.messageId)).size).toBe(1);
    // A checkpoint is reported for each super-step LangGraph saved.
    expect(events.some((e) => e.__typename === "CheckpointEvent")).toBe(true);
  });

  it("a reconnect with after: <last seq> gets exactly the missing events while the run keeps publishing", async () => {
    fake.enqueue({ kind: "text", tokens: range(150).map((i) => `t${i} `), delayMs: 6 });
    const { runId } = await startRun(app.url, "count for me");
    const watcher = connect(app.url);
    const full = collect(watcher, RUN_EVENTS, { runId });

    const firstClient = connect(app.url);
    const first = collect(firstClient, RUN_EVENTS, { runId });
    await until(() => first.results.length >= 25, "25 events on the first connection");
    const received = first.results.map((r) => r.runEvents);
    first.dispose();
    await firstClient.dispose();

    const lastSeq = received.at(-1).seq;
    const fullSoFar = full.results.length;
    const secondClient = connect(app.url);
    const rest = (await collect(secondClient, RUN_EVENTS, { runId, after: lastSeq }).done).map((r) => r.runEvents);
    const all = (await full.done).map((r) => r.runEvents);
    await secondClient.dispose();
    await watcher.dispose();

    expect(fullSoFar).toBeLessThan(all.length - 50); // the reconnect happened mid-run
    expect(rest[0].seq).toBe(lastSeq + 1);
    expect([...received, ...rest]).toEqual(all);
    expectWholeRun(all, runId);
  });

  it("100 concurrent subscribers of one run all receive the identical sequence", async () => {
    fake.enqueue({ kind: "text", tokens: range(40).map((i) => `w${i} `), delayMs: 5, firstDelayMs: 200 });
    const { runId } = await startRun(app.url, "for everyone");
    const clients = range(10).map(() => connect(app.url));
    const subs = range(100).map((i) => collect(clients[i % 10]!, RUN_EVENTS, { runId }));
    const sequences = (await Promise.all(subs.map((s) => s.done))).map((results) => results.map((r) => r.runEvents));
    await Promise.all(clients.map((c) => c.dispose()));

    expect(sequences).toHaveLength(100);
    for (const sequence of sequences) expect(sequence).toEqual(sequences[0]);
    expectWholeRun(sequences[0]!, runId);
    expect(sequences[0]!.filter((e) => e.__typename === "TokenEvent").map((e) => e.text)).toEqual(range(40).map((i) => `w${i} `));
  });

  it("reports the tool call and its result for a tools turn", async () => {
    const { runId } = await startRun(app.url, "Please calculate 17 * 3");
    const client = connect(app.url);
    const events = (await collect(client, RUN_EVENTS, { runId }).done).map((r) => r.runEvents);
    await client.dispose();

    expectWholeRun(events, runId);
    const call = events.find((e) => e.__typename === "ToolCallEvent");
    const result = events.find((e) => e.__typename === "ToolResultEvent");
    expect(call).toMatchObject({ name: "calculator", args: { expression: "17 * 3" } });
    expect(result).toMatchObject({ toolCallId: call.toolCallId, name: "calculator", content: "51", isError: false });
    const tokens = events.filter((e) => e.__typename === "TokenEvent");
    expect(tokens.map((e) => e.text).join("")).toBe("The result is 51.");
    expect(call.seq).toBeLessThan(result.seq);
    expect(result.seq).toBeLessThan(tokens[0].seq);
  });

  it("rejects an unknown run id and a malformed one with clear GraphQL errors", async () => {
    const client = connect(app.url);
    const unknown = "3f2b8c1e-6a4d-4e8f-9b7a-0c1d2e3f4a5b";
    await expect(collect(client, RUN_EVENTS, { runId: unknown }).done).rejects.toThrow(/does not exist.*NOT_FOUND|NOT_FOUND.*does not exist/s);
    await expect(collect(client, RUN_EVENTS, { runId: "not-a-run" }).done).rejects.toThrow(/VALIDATION/);
    await expect(collect(client, RUN_EVENTS, { runId: unknown, after: -1 }).done).rejects.toThrow(/after must not be negative/);
    await expect(collect(client, CONVERSATION_EVENTS, { conversationId: unknown }).done).rejects.toThrow(/NOT_FOUND/);
    await client.dispose();
  });
});

describe.each(TRANSPORTS)("conversationEvents over $name", ({ client: connect }) => {
  it("follows every run of the conversation and stays open between them", async () => {
    const first = await startRun(app.url, "first");
    await waitForRun(app.url, first.runId);
    await until(() => app.services.bus.stats().conversationSubscribers === 0, "no conversation subscribers left from before");
    const client = connect(app.url);
    const sub = collect(client, CONVERSATION_EVENTS, { conversationId: first.conversationId });
    await until(() => app.services.bus.stats().conversationSubscribers === 1, "the conversation subscriber");

    const second = await startRun(app.url, "second", first.conversationId);
    await waitForRun(app.url, second.runId);
    const third = await startRun(app.url, "third", first.conversationId);
    await waitForRun(app.url, third.runId);
    const terminals = () => sub.results.filter((r) => r.conversationEvents.status === "COMPLETED").length;
    await until(() => terminals() === 2, "both runs' terminal events");
    sub.dispose();
    await client.dispose();

    const events = sub.results.map((r) => r.conversationEvents);
    expect([...new Set(events.map((e) => e.runId))]).toEqual([second.runId, third.runId]);
    for (const [run, text] of [
      [second.runId, "Echo: second"],
      [third.runId, "Echo: third"],
    ] as const) {
      const ofRun = events.filter((e) => e.runId === run);
      expectWholeRun(ofRun, run);
      expect(
        ofRun
          .filter((e) => e.__typename === "TokenEvent")
          .map((e) => e.text)
          .join(""),
      ).toBe(text);
    }
  });
});

/** A conversationsChanged selection of every Conversation field (objects by __typename), so no field is forgotten. */
function everyConversationField(): string {
  const type = schema.getType("Conversation") as GraphQLObjectType;
  const fields = Object.values(type.getFields())
    .filter((f) => f.args.every((a) => !isNonNullType(a.type)))
    .map((f) => (isLeafType(getNamedType(f.type)) ? f.name : `${f.name} { __typename }`));
  return `subscription { conversationsChanged { ${fields.join(" ")} } }`;
}

describe.each(TRANSPORTS)("conversationsChanged over $name", ({ client: connect }) => {
  it("notifies creation, a run starting and ending, a rename and the deletion", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    fake.setResponder(async (request) => {
      await gate;
      return defaultResponder(request);
    });
    try {
      // The previous scenario's subscribers are released asynchronously once their clients unsubscribe.
      await until(() => app.services.bus.stats().changeSubscribers === 0, "no change subscribers left from before");
      const client = connect(app.url);
      const rows = collect(client, CONVERSATIONS_CHANGED_ROW);
      const status = collect(client, CONVERSATIONS_CHANGED);
      await until(() => app.services.bus.stats().changeSubscribers === 2, "two change subscribers");

      const { runId, conversationId } = await startRun(app.url, "Sidebar entry\nsecond line");
      const rowsOf = () => rows.results.map((r) => r.conversationsChanged).filter((c) => c.id === conversationId);
      const statusOf = () => status.results.map((r) => r.conversationsChanged).filter((c) => c.id === conversationId);

      // Created, with its run in progress (the model is held back by the gate).
      await until(() => statusOf().find((c) => c.activeRun?.id === runId && c.activeRun.status === "RUNNING"), "a notice with the active run");
      expect(rowsOf()[0]).toMatchObject({ title: "Sidebar entry", deleted: false, messageCount: 0 });

      // The run ends: no active run, the latest completed, the message count updated.
      release();
      await until(
        () => statusOf().find((c) => c.activeRun === null && c.latestRun?.status === "COMPLETED" && c.messageCount === 2),
        "a notice of the finished run",
      );

      await gqlOk(app.url, RENAME, { id: conversationId, title: "Renamed entry" });
      await until(() => rowsOf().find((c) => c.title === "Renamed entry"), "a notice of the rename");

      await gqlOk(app.url, DELETE, { id: conversationId });
      const deleted = await until(() => rowsOf().find((c) => c.deleted), "a notice of the deletion");
      expect(deleted).toMatchObject({ id: conversationId, title: "Renamed entry", messageCount: 2, deleted: true });
      expect(rowsOf().at(-1)).toBe(deleted);
      expect(
        rowsOf()
          .slice(0, -1)
          .every((c) => c.deleted === false),
      ).toBe(true);
      // Its runs went with it: the notice answers them empty rather than failing.
      const gone = await until(() => statusOf().find((c) => c.deleted), "the deletion notice with run fields");
      expect(gone).toMatchObject({ activeRun: null, latestRun: null });
      rows.dispose();
      status.dispose();
      await client.dispose();
    } finally {
      release();
      fake.setResponder(defaultResponder);
    }
  });

  it("answers every Conversation field on a deletion notice: the snapshot's columns, the rest empty", async () => {
    const { runId, conversationId } = await startRun(app.url, "to be deleted");
    await waitForRun(app.url, runId);
    await until(() => app.services.bus.stats().changeSubscribers === 0, "no change subscribers left from before");
    const client = connect(app.url);
    const notices = collect(client, everyConversationField());
    await until(() => app.services.bus.stats().changeSubscribers === 1, "the change subscriber");
    await gqlOk(app.url, DELETE, { id: conversationId });
    const deleted = await until(() => notices.results.map((r) => r.conversationsChanged).find((c) => c.id === conversationId), "the deletion notice");
    notices.dispose();
    await client.dispose();

    expect(deleted).toMatchObject({
      deleted: true,
      title: "to be deleted",
      messageCount: 2,
      activeRun: null,
      latestRun: null,
      resumable: false,
      messages: [],
      next: [],
      pendingInterrupts: [],
      forkedFrom: null,
      agentName: "default",
      usage: { __typename: "Usage" },
    });
    // What went with it answers empty; the agent is configuration, not part of the conversation.
    for (const [name, value] of Object.entries(deleted)) {
      if (value && typeof value === "object" && "__typename" in value) expect(value.__typename, name).toMatch(/Connection$|^Usage$|^Agent$/);
    }
  });
});
