// GET /api/conversations/:id/export: JSON Lines (one line per checkpoint, oldest
// first, in the seed's format plus run_id from the correlation) and Markdown;
// 400 for a malformed id or format, 404 for an unknown or deleted conversation,
// and the API token guards it like every other route. A long conversation is
// read and written a page of checkpoints at a time.
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AIMessage } from "@langchain/core/messages";
import { expectedUsage, startFakeOllama, type FakeChatRequest, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp, waitForRun } from "../testkit/app.ts";
import { gqlOk } from "../testkit/graphql.ts";
import { RESUME_RUN, START_RUN } from "../testkit/documents.ts";
import { buildChatGraph } from "../src/agent/chat-graph.ts";
import { threadConfig } from "../src/agent/runtime.ts";
import type { App } from "../src/app.ts";
import { exportRoute } from "../src/server/routes/export.ts";
import { setPrincipal } from "../src/server/auth.ts";
import { LOCAL_PRINCIPAL } from "../src/domain/principal.ts";
import { EXPORT_PAGE_CHECKPOINTS } from "../src/read/conversation-export.ts";
import type { ReadSources } from "../src/read/scope.ts";

let fake: FakeOllama;
let app: App & { databaseFile: string };
let conversationId: string;
let runIds: string[];
/** The model requests of each of runIds' runs. */
let callsOf: FakeChatRequest[][];

beforeAll(async () => {
  fake = await startFakeOllama();
  // "careful" asks before each calculation.
  const config = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "runledger-export-")), "agents.json");
  fs.writeFileSync(
    config,
    JSON.stringify({ agents: { default: { type: "chat" }, careful: { type: "chat", tools: ["calculator"], requireApproval: ["calculator"] } } }),
  );
  app = await startTestApp({ ollamaUrl: fake.url, env: { RUN_HEARTBEAT_MS: "60000", RUN_LEASE_MS: "600000", RUNLEDGER_CONFIG: config } });
  // A tools turn, a failed start, its resume, and a note written outside any run.
  const marks = [fake.requests.length];
  const first = await gqlOk(app.url, START_RUN, { message: "Weekly budget\nPlease calculate 120 / 7" });
  conversationId = first.startRun.conversation.id;
  await waitForRun(app.url, first.startRun.run.id);
  marks.push(fake.requests.length);
  fake.enqueue({ kind: "notFound" });
  const second = await gqlOk(app.url, START_RUN, { message: "And per day?", conversationId });
  await waitForRun(app.url, second.startRun.run.id);
  marks.push(fake.requests.length);
  const third = await gqlOk(app.url, RESUME_RUN, { conversationId });
  await waitForRun(app.url, third.resumeRun.run.id);
  marks.push(fake.requests.length);
  runIds = [first.startRun.run.id, second.startRun.run.id, third.resumeRun.run.id];
  callsOf = runIds.map((_, i) => fake.requests.slice(marks[i], marks[i + 1]));
  const graph = buildChatGraph({ systemPrompt: "", requireApproval: [], checkpointer: app.storage.saver });
  await graph.updateState(threadConfig(conversationId), { messages: [new AIMessage({ content: "Reviewed by the finance team." })] }, "agent");
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

const exportUrl = (id: string, format?: string) => `${app.url}/api/conversations/${id}/export${format === undefined ? "" : `?format=${format}`}`;

describe("JSON Lines", () => {
  it("writes one line per checkpoint, oldest first, with the correlated run", async () => {
    const response = await fetch(exportUrl(conversationId, "jsonl"));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/x-ndjson; charset=utf-8");
    const text = await response.text();
    expect(text.endsWith("\n")).toBe(true);
    const lines = text
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));

    const { conversation } = await gqlOk(
      app.url,
      `query($id: ID!) { conversation(id: $id) { checkpoints(first: 100) { edges { node { id createdAt step run { id } } } } } }`,
      { id: conversationId },
    );
    const checkpoints = conversation.checkpoints.edges.map((e: any) => e.node);
    expect(lines.map((l) => l.checkpoint_id)).toEqual(checkpoints.map((c: any) => c.id));
    expect(lines.map((l) => l.run_id)).toEqual(checkpoints.map((c: any) => c.run?.id ?? null));
    expect(lines.map((l) => l.created_at)).toEqual(checkpoints.map((c: any) => c.createdAt));
    for (const line of lines) {
      expect(Object.keys(line).sort()).toEqual([
        "checkpoint_id",
        "created_at",
        "last_message",
        "message_count",
        "next",
        "run_id",
        "run_usage",
        "source",
        "step",
      ]);
    }
    // The seed's own inspection: {step, source, next, message_count, role: .last_message.role}.
    expect(lines.map((l) => [l.step, l.source, l.next, l.message_count, l.last_message?.role ?? null])).toEqual([
      [-1, "input", ["__start__"], 0, null],
      [0, "loop", ["agent"], 1, "user"],
      [1, "loop", ["tools"], 2, "assistant"],
      [2, "loop", ["agent"], 3, "tool"],
      [3, "loop", [], 4, "assistant"],
      [4, "input", ["__start__"], 4, "assistant"],
      [5, "loop", ["agent"], 5, "user"],
      [6, "loop", [], 6, "assistant"],
      [7, "update", [], 7, "assistant"],
    ]);
    expect(lines.map((l) => l.run_id)).toEqual([...Array(5).fill(runIds[0]), runIds[1], runIds[1], runIds[2], null]);
    expect(lines[2].last_message.tool_calls).toEqual([{ id: expect.any(String), name: "calculator", args: { expression: "120 / 7" } }]);
    expect(lines[3].last_message).toMatchObject({
      role: "tool",
      content: "17.1428571428571",
      name: "calculator",
      tool_call_id: lines[2].last_message.tool_calls[0].id,
    });
  });

  it("gives each line the usage of its run, as the API and the model report it, and none outside every run", async () => {
    const lines = (await (await fetch(exportUrl(conversationId, "jsonl"))).text())
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    const { conversation } = await gqlOk(
      app.url,
      `query($id: ID!) { conversation(id: $id) { runs(first: 10) { edges { node { id usage { inputTokens outputTokens modelCalls timeToFirstTokenMs modelDurationMs } } } } } }`,
      { id: conversationId },
    );
    const usageOf = new Map<string, any>(conversation.runs.edges.map((e: any) => [e.node.id, e.node.usage]));
    // Two calls (the tool call, then the answer), none (the model was not found), one (the resume's answer).
    expect(callsOf.map((calls) => expectedUsage(calls).modelCalls)).toEqual([2, 0, 1]);
    for (const [i, runId] of runIds.entries()) {
      const { inputTokens, outputTokens, modelCalls, modelDurationMs } = expectedUsage(callsOf[i]!);
      const timeToFirstToken = usageOf.get(runId).timeToFirstTokenMs;
      const expected = {
        input_tokens: inputTokens,
        output_tokens: outputTokens,
        model_calls: modelCalls,
        time_to_first_token_ms: timeToFirstToken,
        model_duration_ms: modelDurationMs,
      };
      expect(usageOf.get(runId)).toEqual({ inputTokens, outputTokens, modelCalls, timeToFirstTokenMs: timeToFirstToken, modelDurationMs });
      const ofRun = lines.filter((l) => l.run_id === runId);
      expect(ofRun.length).toBeGreaterThan(0);
      for (const line of ofRun) expect(line.run_usage).toEqual(expected);
    }
    expect(lines.at(-1)).toMatchObject({ source: "update", run_id: null, run_usage: null });
    // Counting each run once gives the conversation's total.
    const total = [...new Map(lines.filter((l) => l.run_usage).map((l) => [l.run_id, l.run_usage])).values()].reduce((sum, u) => sum + u.model_duration_ms, 0);
    expect(total).toBe(
      (await gqlOk(app.url, `query($id: ID!) { conversation(id: $id) { usage { modelDurationMs } } }`, { id: conversationId })).conversation.usage
        .modelDurationMs,
    );
    expect(total).toBeGreaterThan(0);
  });

  it("is the default format", async () => {
    const response = await fetch(exportUrl(conversationId));
    expect(response.status).toBe(200);
    expect((await response.text()).trimEnd().split("\n")).toHaveLength(9);
  });
});

describe("Markdown", () => {
  it("gives the title, ids and dates, then each run with its messages; tool calls and results under their own headings", async () => {
    const response = await fetch(exportUrl(conversationId, "markdown"));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/markdown; charset=utf-8");
    const markdown = await response.text();
    const { conversation } = await gqlOk(app.url, `query($id: ID!) { conversation(id: $id) { title createdAt updatedAt } }`, { id: conversationId });
    expect(markdown.startsWith(`# ${conversation.title}\n`)).toBe(true);
    expect(markdown).toContain(`- Conversation: \`${conversationId}\``);
    expect(markdown).toContain(`- Created: ${conversation.createdAt}`);
    expect(markdown).toContain(`- Updated: ${conversation.updatedAt}`);
    const headings = markdown.split("\n").filter((l) => l.startsWith("#"));
    expect(headings).toEqual([
      `# ${conversation.title}`,
      "## Run 1 · completed",
      "### User",
      "### Assistant",
      "### Tool call: calculator",
      "### Tool result: calculator",
      "### Assistant",
      "## Run 2 · failed (MODEL_NOT_FOUND)",
      "### User",
      "## Run 3 · completed",
      "### Assistant",
      "## Outside any run",
      "### Assistant",
    ]);
    expect(markdown).toContain("Weekly budget\nPlease calculate 120 / 7");
    expect(markdown).toContain('```json\n{\n  "expression": "120 / 7"\n}\n```');
    expect(markdown).toContain("```text\n17.1428571428571\n```");
    expect(markdown).toContain(`\`${runIds[1]}\` · start ·`);
    expect(markdown).toContain(`> model "qwen3" not found, try pulling it first`);
    expect(markdown).toContain("Echo: And per day?");
    expect(markdown).toContain("Reviewed by the finance team.");
  });

  it("says what each run and the whole conversation cost, and the agent", async () => {
    const markdown = await (await fetch(exportUrl(conversationId, "markdown"))).text();
    const { conversation } = await gqlOk(
      app.url,
      `query($id: ID!) { conversation(id: $id) { usage { inputTokens outputTokens modelCalls modelDurationMs } runs(first: 10) { edges { node { usage { inputTokens outputTokens modelCalls modelDurationMs timeToFirstTokenMs } } } } } }`,
      { id: conversationId },
    );
    const line = (u: any) =>
      `${u.inputTokens} input and ${u.outputTokens} output tokens in ${u.modelCalls} model call${u.modelCalls === 1 ? "" : "s"} (${u.modelDurationMs} ms in the model)`;
    expect(conversation.usage.modelCalls).toBe(3);
    expect(markdown).toContain(`- Agent: default\n`);
    expect(markdown).toContain(`- Usage: ${line(conversation.usage)}\n`);
    const [first, failed, resumed] = conversation.runs.edges.map((e: any) => e.node.usage);
    expect(markdown).toContain(`Usage: ${line(first)} · first token after ${first.timeToFirstTokenMs} ms\n`);
    expect(markdown).toContain(`Usage: ${line(resumed)} · first token after ${resumed.timeToFirstTokenMs} ms\n`);
    // The run whose model was not found made no call: no usage line under it.
    expect(failed.modelCalls).toBe(0);
    expect(markdown.split("## Run 2")[1]!.split("## Run 3")[0]).not.toContain("Usage:");
  });

  it("shows what a run asked a person, the answer and who gave it, and what still waits; a fork names its source", async () => {
    const ask = async (message: string, id?: string) => {
      const { startRun } = await gqlOk(
        app.url,
        `mutation($m: String!, $c: ID) { startRun(input: { message: $m, agent: "careful", conversationId: $c }) { ... on StartRunSuccess { run { id } conversation { id } } } }`,
        { m: message, c: id },
      );
      await waitForRun(app.url, startRun.run.id);
      return { runId: startRun.run.id as string, conversationId: startRun.conversation.id as string };
    };
    const asked = await ask("Please calculate 6 * 7");
    const id = asked.conversationId;
    const [question] = (await gqlOk(app.url, `query($id: ID!) { conversation(id: $id) { pendingInterrupts { id value } } }`, { id })).conversation
      .pendingInterrupts;
    const approval = { toolCalls: [{ id: question.value.toolCalls[0].id, decision: "approve" }] };
    const { resumeRun } = await gqlOk(
      app.url,
      `mutation($id: ID!, $r: [InterruptResponseInput!]) { resumeRun(input: { conversationId: $id, responses: $r }) { ... on ResumeRunSuccess { run { id } } } }`,
      { id, r: [{ interruptId: question.id, value: approval }] },
    );
    await waitForRun(app.url, resumeRun.run.id);
    await ask("Please calculate 2 + 2", id);

    const markdown = await (await fetch(exportUrl(id, "markdown"))).text();
    expect(markdown).toContain("- Agent: careful\n");
    const headings = markdown.split("\n").filter((l) => l.startsWith("#"));
    expect(headings.slice(1)).toEqual([
      "## Run 1 · waiting",
      "### User",
      "### Assistant",
      "### Tool call: calculator",
      "### Asked (approve)",
      "## Run 2 · completed",
      "### Tool result: calculator",
      "### Assistant",
      "## Run 3 · waiting",
      "### User",
      "### Assistant",
      "### Tool call: calculator",
      "### Asked (approve)",
    ]);
    const [, firstQuestion, secondQuestion] = markdown.split("### Asked (approve)");
    expect(firstQuestion).toContain(`Interrupt \`${question.id}\``);
    expect(firstQuestion).toContain('"type": "tool_approval"');
    expect(firstQuestion).toContain(`Answered by \`${resumeRun.run.id}\`:\n\n\`\`\`json\n${JSON.stringify(approval, null, 2)}\n\`\`\``);
    expect(secondQuestion).toContain("_Waiting for an answer._");

    // A new message supersedes the waiting question; a fork names where it came from.
    await ask("Never mind", id);
    expect((await (await fetch(exportUrl(id, "markdown"))).text()).split("### Asked (approve)")[2]).toContain("_Superseded by a new message._");
    const { conversation } = await gqlOk(app.url, `query($id: ID!) { conversation(id: $id) { checkpoints(first: 1) { edges { node { id } } } } }`, { id });
    const checkpointId = conversation.checkpoints.edges[0].node.id;
    const { forkConversation } = await gqlOk(
      app.url,
      `mutation($c: ID!) { forkConversation(input: { checkpointId: $c }) { ... on ForkConversationSuccess { conversation { id } } } }`,
      { c: checkpointId },
    );
    expect(await (await fetch(exportUrl(forkConversation.conversation.id, "markdown"))).text()).toContain(
      `- Forked from: \`${id}\` at checkpoint \`${checkpointId}\`\n`,
    );
  });
});

describe("refusals", () => {
  it("answers 400 for a malformed id or an unknown format, and 404 for an unknown or deleted conversation", async () => {
    const bad = await fetch(exportUrl("not-a-uuid", "jsonl"));
    expect(bad.status).toBe(400);
    // The same {code, message} body as every other route under /api.
    expect(await bad.json()).toEqual({ code: "BAD_REQUEST", message: expect.stringContaining("id") });
    const format = await fetch(exportUrl(conversationId, "csv"));
    expect(format.status).toBe(400);
    expect(await format.json()).toEqual({ code: "BAD_REQUEST", message: 'format must be one of jsonl, markdown, got "csv"' });
    const unknown = await fetch(exportUrl("00000000-0000-4000-8000-000000000000", "markdown"));
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ code: "NOT_FOUND", message: expect.stringContaining("does not exist") });
    const post = await fetch(exportUrl(conversationId, "jsonl"), { method: "POST" });
    expect(post.status).toBe(405);
    expect(await post.json()).toEqual({ code: "METHOD_NOT_ALLOWED", message: "use GET" });

    const { startRun } = await gqlOk(app.url, START_RUN, { message: "Short-lived" });
    await waitForRun(app.url, startRun.run.id);
    expect((await fetch(exportUrl(startRun.conversation.id))).status).toBe(200);
    await gqlOk(app.url, `mutation($id: ID!) { deleteConversation(input: { conversationId: $id }) { __typename } }`, { id: startRun.conversation.id });
    expect((await fetch(exportUrl(startRun.conversation.id))).status).toBe(404);
  });

  it("needs the API token when one is set", async () => {
    const guarded = await startTestApp({ ollamaUrl: fake.url, env: { API_TOKEN: "export-secret-token" } });
    try {
      const url = `${guarded.url}/api/conversations/00000000-0000-4000-8000-000000000000/export?format=jsonl`;
      expect((await fetch(url)).status).toBe(401);
      expect((await fetch(url, { headers: { authorization: "Bearer export-secret-token" } })).status).toBe(404);
    } finally {
      await guarded.close();
    }
  });
});

/** Every call made on `target`, by method and the checkpoints it was asked for; `before` runs first (and may hold the call up). */
function recorded<T extends object>(
  target: T,
  calls: { method: string; checkpoints: number | null }[],
  checkpointsOf: (method: string, args: unknown[]) => number | null,
  before: (method: string) => Promise<void> = async () => {},
): T {
  return new Proxy(target, {
    get(object, property) {
      const value = Reflect.get(object, property);
      if (typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        calls.push({ method: String(property), checkpoints: checkpointsOf(String(property), args) });
        await before(String(property));
        return value.apply(object, args);
      };
    },
  });
}

describe("a long conversation", () => {
  const PAGE = 5;
  let longId: string;
  let server: http.Server;
  let serverUrl: string;
  const calls: { method: string; checkpoints: number | null }[] = [];
  /** What the route threw (it cut the response). */
  const failures: unknown[] = [];
  /** Resolved by the client when the first bytes of a body reach it. */
  let firstBytes: { promise: Promise<void>; resolve: () => void };
  const expectFirstBytes = () => {
    let resolve!: () => void;
    firstBytes = { promise: new Promise((r) => (resolve = r)), resolve };
  };

  beforeAll(async () => {
    const { startRun } = await gqlOk(app.url, START_RUN, { message: "A long one" });
    longId = startRun.conversation.id;
    await waitForRun(app.url, startRun.run.id);
    const graph = buildChatGraph({ systemPrompt: "", requireApproval: [], checkpointer: app.storage.saver });
    for (let i = 1; i <= 40; i += 1) await graph.updateState(threadConfig(longId), { messages: [new AIMessage({ content: `Note ${i}` })] }, "agent");
    // The app's own stores, each call recorded. The second page's contents wait for the client to
    // have the first bytes: an export that answered only once it had read everything would wait for good.
    const { services, storage } = app;
    const sources: ReadSources = {
      runs: services.store,
      conversationList: services.conversationList,
      toolJournal: services.toolJournal,
      runEvents: services.runEvents,
      checkpointReads: recorded(
        storage.checkpointReads,
        calls,
        (method, args) => (method === "contents" ? (args[0] as unknown[]).length : null),
        async (method) => {
          if (method !== "contents" || calls.filter((c) => c.method === "contents").length !== 2) return;
          let timer: NodeJS.Timeout | undefined;
          const timeout = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error("no byte of the export reached the client before its second page was read")), 10_000);
          });
          await Promise.race([firstBytes.promise, timeout]).finally(() => clearTimeout(timer));
        },
      ),
      states: recorded(services.agent, calls, (method, args) =>
        method === "readHistory" ? ((args[2] as { count?: number } | undefined)?.count ?? Number.POSITIVE_INFINITY) : null,
      ),
    };
    const route = exportRoute(sources, { pageSize: PAGE });
    server = http.createServer((req, res) => {
      setPrincipal(req, LOCAL_PRINCIPAL);
      route(req, res).catch((error: unknown) => {
        failures.push(error);
        res.destroy();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    serverUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  /** The body, read as it arrives; resolves firstBytes on its first bytes. */
  async function readExport(format: string): Promise<{ text: string; chunks: number }> {
    expectFirstBytes();
    calls.length = 0;
    try {
      const response = await fetch(`${serverUrl}/api/conversations/${longId}/export?format=${format}`);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-length")).toBeNull();
      const reader = response.body!.getReader();
      const decoder = new TextDecoder();
      let text = "";
      let chunks = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks += 1;
        firstBytes.resolve();
        text += decoder.decode(value, { stream: true });
      }
      return { text: text + decoder.decode(), chunks };
    } catch (error) {
      // A response the route cut: its reason says more than the client's.
      throw failures[0] ?? error;
    }
  }

  it("writes JSON Lines a page of checkpoints at a time, the first before the next is read, as one page would have", async () => {
    const { text, chunks } = await readExport("jsonl");
    const lines = text.trimEnd().split("\n");
    expect(lines.length).toBeGreaterThan(40);
    // The app's own route reads the same conversation in one page: the text is the same, byte for byte.
    expect(lines.length).toBeLessThanOrEqual(EXPORT_PAGE_CHECKPOINTS);
    expect(text).toBe(await (await fetch(exportUrl(longId, "jsonl"))).text());
    expect(chunks).toBeGreaterThan(1);
    // Each checkpoint's state and contents are read with its page, never the whole history at once.
    const pages = Math.ceil(lines.length / PAGE);
    const contents = calls.filter((c) => c.method === "contents");
    const histories = calls.filter((c) => c.method === "readHistory");
    expect(contents).toHaveLength(pages);
    expect(histories).toHaveLength(pages);
    for (const read of [...contents, ...histories]) expect(read.checkpoints).toBeLessThanOrEqual(PAGE);
    expect(calls.filter((c) => c.method === "readCheckpoint" || c.method === "readThread")).toEqual([]);
  });

  it("writes Markdown a page of checkpoints at a time, as one page would have", async () => {
    const { text } = await readExport("markdown");
    expect(text).toBe(await (await fetch(exportUrl(longId, "markdown"))).text());
    expect(text).toContain("Note 40\n");
    const histories = calls.filter((c) => c.method === "readHistory");
    expect(histories.length).toBeGreaterThan(40 / PAGE);
    for (const read of histories) expect(read.checkpoints).toBeLessThanOrEqual(PAGE);
  });
});
