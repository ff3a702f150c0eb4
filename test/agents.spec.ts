// MCP tools inside runs, against real MCP server processes: a server that
// crashes mid-call gives the model a tool error and the run completes (the
// server is back for the next call); a run's cancel reaches the MCP call in
// flight, on the server; a server that is down gives a tool error, never a
// failed run. (Agents, approvals and custom graphs on every backend are in
// test/conformance/api.ts.)
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { ROOT, startTestApp, waitForRun } from "../testkit/app.ts";
import { collect, gqlOk, wsClient } from "../testkit/graphql.ts";
import { CANCEL_RUN, CONVERSATION, RESUME_RUN, RUN_EVENTS, START_AGENT_RUN } from "../testkit/documents.ts";
import { until } from "../testkit/streaming.ts";
import type { App } from "../src/app.ts";

const PENDING = /* GraphQL */ `
  query Pending($id: ID!) {
    conversation(id: $id) { pendingInterrupts { id node value } }
  }
`;
const ANSWER = /* GraphQL */ `
  mutation Answer($conversationId: ID!, $responses: [InterruptResponseInput!]) {
    resumeRun(input: { conversationId: $conversationId, responses: $responses }) { __typename ... on ResumeRunSuccess { run { id } } ... on Error { code message } }
  }
`;

let fake: FakeOllama;
let app: App;
let log: string;

function entries(): any[] {
  return fs.existsSync(log)
    ? fs
        .readFileSync(log, "utf8")
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];
}

beforeAll(async () => {
  fake = await startFakeOllama();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-mcp-runs-"));
  log = path.join(dir, "calls.log");
  const server = path.join(ROOT, "test", "fixtures", "mcp", "stdio-server.mjs");
  const config = {
    agents: {
      default: { type: "chat" },
      toolbox: { type: "chat", tools: [], mcpServers: { fx: { command: process.execPath, args: [server], env: { MCP_FIXTURE_LOG: log } } } },
      broken: {
        type: "chat",
        tools: [],
        mcpServers: { gone: { command: process.execPath, args: [server], env: { MCP_FIXTURE_FAIL_START: "cannot start" }, tools: ["echo"] } },
      },
    },
  };
  fs.writeFileSync(path.join(dir, "agents.json"), JSON.stringify(config));
  app = await startTestApp({ ollamaUrl: fake.url, env: { RUNLEDGER_CONFIG: path.join(dir, "agents.json") } });
}, 60_000);
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

async function run(message: string, agent: string): Promise<{ runId: string; conversationId: string }> {
  const { startRun } = await gqlOk(app.url, START_AGENT_RUN, { message, agent });
  return { runId: startRun.run.id, conversationId: startRun.conversation.id };
}

describe("MCP tools in runs", () => {
  it("a server that crashes mid-call gives the model a tool error; the run completes, and the restarted server serves the next call", async () => {
    fake.enqueue({ kind: "toolCalls", calls: [{ name: "crash", args: {} }] }, { kind: "text", tokens: ["It ", "broke."] });
    const { runId } = await run("Crash it.", "toolbox");
    const events = (await collect(wsClient(app.url), RUN_EVENTS, { runId }).done).map((r) => r.runEvents);
    const result = events.find((e) => e.__typename === "ToolResultEvent");
    expect(result).toMatchObject({ name: "crash", isError: true });
    expect(result.content).toMatch(/MCP server "fx" went away during the call to crash/);
    expect(events.at(-1)).toMatchObject({ status: "COMPLETED", errorCode: null });
    // The model saw the error as the tool's result.
    expect(fake.requests.at(-1)!.messages.at(-1)).toMatchObject({ role: "tool", content: result.content });

    // The supervisor restarts the server; the agents query shows it.
    const fx = async () =>
      (await gqlOk(app.url, `{ agents { name mcpServers { name state restarts lastError } } }`)).agents.find((a: any) => a.name === "toolbox").mcpServers[0];
    await until(async () => (await fx()).state === "READY" && (await fx()).restarts > 0, "the server to be back");
    fake.enqueue({ kind: "toolCalls", calls: [{ name: "echo", args: { text: "back again" } }] }, { kind: "text", tokens: ["Fine."] });
    const next = await run("Echo it.", "toolbox");
    const after = (await collect(wsClient(app.url), RUN_EVENTS, { runId: next.runId }).done).map((r) => r.runEvents);
    expect(after.find((e) => e.__typename === "ToolResultEvent")).toMatchObject({ name: "echo", content: "back again", isError: false });
  });

  it("a cancel reaches the MCP call in flight: the server is told, the run is CANCELLED, and the call in doubt runs again only when a person says so", async () => {
    fake.enqueue({ kind: "toolCalls", calls: [{ name: "slow", args: { label: "long job" } }] });
    const { runId, conversationId } = await run("Start the long job.", "toolbox");
    await until(() => entries().some((e) => e.event === "started" && e.label === "long job"), "the server to start the call");
    const { cancelRun } = await gqlOk(app.url, CANCEL_RUN, { runId });
    expect(cancelRun).toMatchObject({ __typename: "CancelRunSuccess", run: { status: "CANCELLED" } });
    await until(() => entries().some((e) => e.event === "cancelled" && e.label === "long job"), "the server to see the cancellation");
    const { conversation } = await gqlOk(app.url, CONVERSATION, { id: conversationId });
    expect(conversation).toMatchObject({ next: ["tools"], resumable: true });
    // The call never finished, so it may have taken effect: the resume runs nothing and asks.
    const { resumeRun } = await gqlOk(app.url, RESUME_RUN, { conversationId });
    expect(await waitForRun(app.url, resumeRun.run.id)).toMatchObject({ status: "WAITING" });
    const { conversation: waiting } = await gqlOk(app.url, PENDING, { id: conversationId });
    expect(waiting.pendingInterrupts).toMatchObject([
      { node: "tools", value: { type: "tool_in_doubt", tool: "slow", args: { label: "long job" }, attempt: 1 } },
    ]);
    expect(entries().filter((e) => e.event === "started" && e.label === "long job")).toHaveLength(1);
    // Told to retry, it runs again.
    const { resumeRun: retried } = await gqlOk(app.url, ANSWER, {
      conversationId,
      responses: [{ interruptId: waiting.pendingInterrupts[0].id, value: { decision: "retry" } }],
    });
    expect(retried.__typename).toBe("ResumeRunSuccess");
    await until(() => entries().filter((e) => e.event === "started" && e.label === "long job").length === 2, "the call to start again");
    await gqlOk(app.url, CANCEL_RUN, { runId: retried.run.id });
    expect(await waitForRun(app.url, retried.run.id)).toMatchObject({ status: "CANCELLED" });
  });

  it("a server that is down gives the model a tool error, never a failed run", async () => {
    fake.enqueue({ kind: "toolCalls", calls: [{ name: "echo", args: { text: "anyone?" } }] }, { kind: "text", tokens: ["Nobody."] });
    const { runId } = await run("Echo through a dead server.", "broken");
    const events = (await collect(wsClient(app.url), RUN_EVENTS, { runId }).done).map((r) => r.runEvents);
    expect(events.find((e) => e.__typename === "ToolResultEvent")).toMatchObject({ name: "echo", isError: true });
    expect(events.at(-1)).toMatchObject({ status: "COMPLETED" });
  });
});
