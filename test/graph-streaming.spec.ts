// Streaming a custom graph's tool calls, tool results and tokens over the real
// server: a graph with its own ToolNode, one with a compiled subgraph as a
// node, and one whose subgraph asks a person with interrupt(). The model is the
// fake Ollama, driven step by step.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { AIMessage, AIMessageChunk, HumanMessage, ToolMessage, isAIMessage, isToolMessage, type AIMessageFields } from "@langchain/core/messages";
import { Overwrite } from "@langchain/langgraph";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { updateMessages } from "../src/agent/runtime.ts";
import { ROOT, startTestApp } from "../testkit/app.ts";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { collect, gqlOk, wsClient } from "../testkit/graphql.ts";
import type { App } from "../src/app.ts";

const START = /* GraphQL */ `
  mutation Start($message: String!, $agent: String, $conversationId: ID) {
    startRun(input: { message: $message, agent: $agent, conversationId: $conversationId }) {
      __typename ... on StartRunSuccess { run { id } conversation { id } } ... on Error { code message }
    }
  }
`;
const EVENTS = /* GraphQL */ `
  subscription Events($runId: ID!) {
    runEvents(runId: $runId) {
      __typename seq
      ... on RunStatusEvent { status errorCode errorMessage }
      ... on TokenEvent { text node }
      ... on ToolCallEvent { toolCallId name args }
      ... on ToolResultEvent { toolCallId name content isError }
      ... on CustomEvent { name data }
      ... on CheckpointEvent { checkpoint { id } }
      ... on InterruptEvent { interrupt { id node value } }
    }
  }
`;
const CONVERSATION = /* GraphQL */ `
  query Conversation($id: ID!) {
    conversation(id: $id) {
      messages { role content toolCalls { id name args } toolCallId name }
      checkpoints(first: 100) { edges { node { id run { id } } } }
      pendingInterrupts { id node value run { id } }
      next resumable
      runs(first: 10) { totalCount edges { node { id status interrupts { id state answer } } } }
    }
  }
`;
const RESUME = /* GraphQL */ `
  mutation Resume($conversationId: ID!, $responses: [InterruptResponseInput!]) {
    resumeRun(input: { conversationId: $conversationId, responses: $responses }) {
      __typename ... on ResumeRunSuccess { run { id } } ... on InterruptMismatchError { code pendingInterruptIds } ... on Error { code message }
    }
  }
`;

const MESSAGE_IDS = /* GraphQL */ `
  query MessageIds($id: ID!) {
    conversation(id: $id) { messages { id content } }
  }
`;
const TOKENS = /* GraphQL */ `
  subscription Tokens($runId: ID!) {
    runEvents(runId: $runId) { __typename ... on TokenEvent { text node messageId } }
  }
`;

/** The run's events that say what the graph did, as [type, ...what it says], in order. */
function story(events: any[]): unknown[][] {
  return events.flatMap((e) => {
    switch (e.__typename) {
      case "TokenEvent":
        return [["token", e.node, e.text]];
      case "ToolCallEvent":
        return [["call", e.name, e.args]];
      case "ToolResultEvent":
        return [["result", e.name, e.content, e.isError]];
      case "CustomEvent":
        return [["custom", e.name, e.data]];
      default:
        return [];
    }
  });
}

describe("the messages a node's update writes, in each form the messages reducer takes", () => {
  const call = { id: "call-1", name: "capital", args: { country: "Peru" } };
  const toolCallsOf = (value: unknown) => updateMessages(value).flatMap((m) => (isAIMessage(m) ? (m.tool_calls ?? []).map((c) => [c.id, c.name, c.args]) : []));
  const resultsOf = (value: unknown) => updateMessages(value).flatMap((m) => (isToolMessage(m) ? [[m.tool_call_id, m.name, m.content, m.status]] : []));

  it.each([
    ["one message", new AIMessage({ content: "", tool_calls: [call] })],
    ["a list of messages", [new HumanMessage("hi"), new AIMessage({ content: "", tool_calls: [call] })]],
    ["one chunk", new AIMessageChunk({ content: "", tool_calls: [call] } as AIMessageFields)],
    ["a plain object with a role", { role: "assistant", content: "", tool_calls: [call] }],
    ["a plain object with a type", { type: "ai", content: "", tool_calls: [call] }],
    [
      "OpenAI-style tool calls",
      { role: "assistant", content: "", tool_calls: [{ id: "call-1", type: "function", function: { name: "capital", arguments: '{"country":"Peru"}' } }] },
    ],
    ["a serialized message", JSON.parse(JSON.stringify(new AIMessage({ content: "", tool_calls: [call] })))],
    ["an Overwrite", new Overwrite([new AIMessage({ content: "", tool_calls: [call] })])],
  ])("tool calls from %s", (_form, value) => {
    expect(toolCallsOf(value)).toEqual([["call-1", "capital", { country: "Peru" }]]);
  });

  it.each([
    ["one message", new ToolMessage({ tool_call_id: "call-1", name: "capital", content: "Lima" })],
    ["a plain object with a role", { role: "tool", tool_call_id: "call-1", name: "capital", content: "Lima" }],
    ["a list of plain objects", [{ type: "tool", tool_call_id: "call-1", name: "capital", content: "Lima" }]],
  ])("tool results from %s", (_form, value) => {
    expect(resultsOf(value)).toEqual([["call-1", "capital", "Lima", undefined]]);
  });

  it("leaves out what cannot be a message, and nothing written", () => {
    expect(updateMessages([{ role: "nobody", content: "?" }, new AIMessage("kept")]).map((m) => m.content)).toEqual(["kept"]);
    expect(updateMessages(undefined)).toEqual([]);
    expect(updateMessages(null)).toEqual([]);
  });
});

describe("a custom graph's tools, streamed over the API", () => {
  let fake: FakeOllama;
  let app: App;
  let dir: string;

  beforeAll(async () => {
    fake = await startFakeOllama();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-graph-tools-"));
    const graphs = path.join(ROOT, "test", "fixtures", "graphs");
    const agents = {
      default: { type: "chat" },
      geographer: { type: "graph", module: path.join(graphs, "tools.ts"), export: "graph" },
      researcher: { type: "graph", module: path.join(graphs, "subgraph.ts"), export: "graph" },
      invoker: { type: "graph", module: path.join(graphs, "subgraph.ts"), export: "invoking" },
      clarifier: { type: "graph", module: path.join(graphs, "subgraph-ask.ts"), export: "graph" },
      rules: { type: "graph", module: path.join(graphs, "token-rules.ts"), export: "graph" },
    };
    fs.writeFileSync(path.join(dir, "agents.json"), JSON.stringify({ agents }));
    app = await startTestApp({ ollamaUrl: fake.url, env: { RUNLEDGER_CONFIG: path.join(dir, "agents.json") } });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await fake?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  async function run(agent: string, message: string, conversationId?: string) {
    const { startRun } = await gqlOk(app.url, START, { message, agent, conversationId });
    expect(startRun.__typename).toBe("StartRunSuccess");
    const events = (await collect(wsClient(app.url), EVENTS, { runId: startRun.run.id }).done).map((r) => r.runEvents);
    expect(events.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "COMPLETED" });
    const { conversation } = await gqlOk(app.url, CONVERSATION, { id: startRun.conversation.id });
    return { runId: startRun.run.id as string, conversationId: startRun.conversation.id as string, events, conversation };
  }

  /** Each call is answered by one result, with the call's id. */
  function expectPaired(events: any[]) {
    const calls = events.filter((e) => e.__typename === "ToolCallEvent");
    const results = events.filter((e) => e.__typename === "ToolResultEvent");
    expect(results.map((r) => r.toolCallId)).toEqual(calls.map((c) => c.toolCallId));
    expect(new Set(calls.map((c) => c.toolCallId)).size).toBe(calls.length);
    for (const call of calls) expect(call.toolCallId).toMatch(/\S/);
  }

  it("streams the tokens of the graph's model calls, one message id per call; a call tagged nostream, one that cannot stream and a node's own message come whole", async () => {
    fake.enqueue({ kind: "text", tokens: ["Hidden ", "thought."] }, { kind: "text", tokens: ["Shown ", "answer."] });
    const asked = fake.requests.length;
    const { startRun } = await gqlOk(app.url, START, { message: "Go.", agent: "rules" });
    const tokens = (await collect(wsClient(app.url), TOKENS, { runId: startRun.run.id }).done)
      .map((r) => r.runEvents)
      .filter((e) => e.__typename === "TokenEvent");
    expect(tokens.map((e) => [e.node, e.text])).toEqual([
      // Not token by token: the node's reply, once, when the node ends.
      ["quiet", "Hidden thought."],
      // At the end of the model call, with the model's own id.
      ["whole", "All at once."],
      ["answer", "Shown "],
      ["answer", "answer."],
      // A message the node made itself, when the node ends, under an id named after the node's run.
      ["handmade", "Made by hand."],
    ]);
    expect(tokens[1].messageId).toBe("whole-1");
    // Every chunk of a streamed call carries the call's one id; each call has its own.
    expect(tokens[3].messageId).toBe(tokens[2].messageId);
    expect(tokens[0].messageId).toMatch(/^run-/);
    expect(tokens[2].messageId).toMatch(/^run-/);
    expect(tokens[2].messageId).not.toBe(tokens[0].messageId);
    expect(tokens[4].messageId).toMatch(/^run-.+-out-0$/);
    expect(fake.requests.length - asked).toBe(2);
    const { conversation } = await gqlOk(app.url, CONVERSATION, { id: startRun.conversation.id });
    expect(conversation.messages.map((m: any) => m.content)).toEqual(["Go.", "Hidden thought.", "All at once.", "Shown answer.", "Made by hand."]);
    // The ids the tokens carried are written into the messages, so the thread stores the same ones.
    const stored = (await gqlOk(app.url, MESSAGE_IDS, { id: startRun.conversation.id })).conversation.messages;
    expect(stored.slice(1).map((m: any) => m.id)).toEqual([tokens[0].messageId, tokens[1].messageId, tokens[2].messageId, tokens[4].messageId]);
  });

  it("streams the model node's tokens, then each call of its ToolNode and each result, an error included, in order", async () => {
    fake.enqueue(
      {
        kind: "toolCalls",
        text: ["Checking ", "two. "],
        calls: [
          { name: "capital", args: { country: "France" } },
          { name: "capital", args: { country: "Atlantis" } },
        ],
      },
      { kind: "text", tokens: ["Paris; ", "Atlantis ", "has none."] },
    );
    const { events, conversation } = await run("geographer", "Capitals of France and Atlantis?");
    expect(story(events)).toEqual([
      ["token", "model", "Checking "],
      ["token", "model", "two. "],
      ["call", "capital", { country: "France" }],
      ["call", "capital", { country: "Atlantis" }],
      ["result", "capital", "Paris", false],
      ["result", "capital", expect.stringContaining("no capital known for Atlantis"), true],
      ["token", "model", "Paris; "],
      ["token", "model", "Atlantis "],
      ["token", "model", "has none."],
    ]);
    expectPaired(events);
    // The events tell what the thread keeps.
    expect(conversation.messages.map((m: any) => m.role)).toEqual(["USER", "ASSISTANT", "TOOL", "TOOL", "ASSISTANT"]);
    expect(conversation.messages[1].toolCalls.map((c: any) => c.id)).toEqual(events.filter((e) => e.__typename === "ToolCallEvent").map((e) => e.toolCallId));
    // The model heard both results.
    expect(
      fake.requests
        .at(-1)!
        .messages.filter((m) => m.role === "tool")
        .map((m) => m.content),
    ).toEqual(["Paris", expect.stringContaining("Atlantis")]);
  });

  it.each([
    ["researcher", "a compiled subgraph as a node"],
    ["invoker", "a node that invokes a compiled graph"],
  ])("%s: streams what happens inside %s, once, with the subgraph's node names; the run's checkpoints are the conversation's", async (agent) => {
    fake.enqueue(
      { kind: "toolCalls", text: ["Checking. "], calls: [{ name: "capital", args: { country: "France" } }] },
      { kind: "text", tokens: ["Paris ", "it is."] },
      { kind: "text", tokens: ["In ", "short: ", "Paris."] },
    );
    const first = await run(agent, "Capital of France?");
    expect(story(first.events)).toEqual([
      ["custom", "brief", { question: "Capital of France?" }],
      ["token", "model", "Checking. "],
      ["call", "capital", { country: "France" }],
      ["result", "capital", "Paris", false],
      ["token", "model", "Paris "],
      ["token", "model", "it is."],
      ["token", "answer", "In "],
      ["token", "answer", "short: "],
      ["token", "answer", "Paris."],
    ]);
    expectPaired(first.events);
    expect(first.conversation.messages.map((m: any) => m.role)).toEqual(["USER", "ASSISTANT", "TOOL", "ASSISTANT", "ASSISTANT"]);
    // The subgraph's own checkpoints (its namespace) are not the conversation's: a run tells only of the parent graph's.
    const told = first.events.filter((e) => e.__typename === "CheckpointEvent").map((e) => e.checkpoint.id);
    const kept = first.conversation.checkpoints.edges.map((e: any) => e.node);
    expect(told).toEqual(kept.map((c: any) => c.id));
    for (const checkpoint of kept) expect(checkpoint.run).toEqual({ id: first.runId });

    // The next run tells of its own call only, though the subgraph hands the whole thread back to the parent.
    fake.enqueue(
      { kind: "toolCalls", calls: [{ name: "capital", args: { country: "Japan" } }] },
      { kind: "text", tokens: ["Tokyo."] },
      { kind: "text", tokens: ["Tokyo, ", "then."] },
    );
    const second = await run(agent, "And of Japan?", first.conversationId);
    expect(story(second.events)).toEqual([
      ["custom", "brief", { question: "And of Japan?" }],
      ["call", "capital", { country: "Japan" }],
      ["result", "capital", "Tokyo", false],
      ["token", "model", "Tokyo."],
      ["token", "answer", "Tokyo, "],
      ["token", "answer", "then."],
    ]);
    expectPaired(second.events);
    expect(second.conversation.messages).toHaveLength(10);
  });

  it("an interrupt() inside a subgraph: the run waits on LangGraph's interrupt id, a wrong id is refused, the answer reaches the subgraph", async () => {
    const { startRun } = await gqlOk(app.url, START, { message: "Which city?", agent: "clarifier" });
    expect(startRun.__typename).toBe("StartRunSuccess");
    const conversationId = startRun.conversation.id as string;
    const events = (await collect(wsClient(app.url), EVENTS, { runId: startRun.run.id }).done).map((r) => r.runEvents);
    // The subgraph's node told the id LangGraph gave its interrupt.
    const asked = events.filter((e) => e.__typename === "CustomEvent" && e.name === "asked");
    expect(asked.map((e) => e.data.ids)).toEqual([[expect.stringMatching(/\S/)]]);
    const [langGraphId] = asked[0].data.ids as string[];
    const value = { question: 'Who should answer "Which city?"?' };
    // The InterruptEvent comes before the terminal status, and the run ends WAITING.
    expect(events.slice(-2)).toMatchObject([
      { __typename: "InterruptEvent", interrupt: { id: langGraphId, node: "clarify", value } },
      { __typename: "RunStatusEvent", status: "WAITING", errorCode: null },
    ]);
    const waiting = (await gqlOk(app.url, CONVERSATION, { id: conversationId })).conversation;
    // `node` is the agent graph's node that runs the subgraph (the parent's pending task).
    expect(waiting.pendingInterrupts).toEqual([{ id: langGraphId, node: "clarify", value, run: { id: startRun.run.id } }]);
    expect(waiting.runs.edges.map((e: any) => e.node)).toEqual([
      { id: startRun.run.id, status: "WAITING", interrupts: [{ id: langGraphId, state: "PENDING", answer: null }] },
    ]);
    expect(waiting.resumable).toBe(false);

    // A wrong id is refused and changes nothing.
    const wrong = (await gqlOk(app.url, RESUME, { conversationId, responses: [{ interruptId: "not-the-question", value: { name: "Ada" } }] })).resumeRun;
    expect(wrong).toMatchObject({ __typename: "InterruptMismatchError", pendingInterruptIds: [langGraphId] });
    expect((await gqlOk(app.url, CONVERSATION, { id: conversationId })).conversation).toEqual(waiting);

    const { resumeRun } = await gqlOk(app.url, RESUME, { conversationId, responses: [{ interruptId: langGraphId, value: { name: "Ada" } }] });
    expect(resumeRun.__typename).toBe("ResumeRunSuccess");
    const resumed = (await collect(wsClient(app.url), EVENTS, { runId: resumeRun.run.id }).done).map((r) => r.runEvents);
    expect(resumed.filter((e) => e.__typename === "InterruptEvent")).toEqual([]);
    expect(resumed.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "COMPLETED" });
    const done = (await gqlOk(app.url, CONVERSATION, { id: conversationId })).conversation;
    // The subgraph's node got the answer, and the parent went on after it.
    expect(done.messages.map((m: any) => [m.role, m.content])).toEqual([
      ["USER", "Which city?"],
      ["ASSISTANT", "Ada will answer: Which city?"],
      ["ASSISTANT", "Done."],
    ]);
    expect(done.pendingInterrupts).toEqual([]);
    expect(done.runs.edges.map((e: any) => e.node).find((r: any) => r.id === startRun.run.id).interrupts).toEqual([
      { id: langGraphId, state: "ANSWERED", answer: { name: "Ada" } },
    ]);
  });
});
