// The MCP layer against real MCP server processes (test/fixtures/mcp): tools
// listed and called over stdio and streamable HTTP, allow-lists and headers,
// crashes mid-call as tool errors followed by restarts, servers down at
// start-up, cancellation reaching the server, and shutdown leaving no process.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { mkdirSync, writeFileSync } from "node:fs";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import type { StructuredToolInterface } from "@langchain/core/tools";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { McpSupervisor, type McpSupervisorOptions } from "../src/agent/mcp/index.ts";
import { agentTools, agentToolInfo } from "../src/agent/tool-info.ts";
import { loadAgentDefinitions } from "../src/agent/agent-file.ts";
import type { AgentDefinition } from "../src/agent/kinds/index.ts";
import {
  chatAgent,
  eventually,
  freePort,
  httpServer,
  memoryLogger,
  processRuns,
  readFixtureLog,
  startHttpFixture,
  STDIO_SERVER,
  stdioServer,
  waitForStatus,
  type HttpFixture,
} from "./fixtures/mcp/helpers.ts";

const dir = mkdtempSync(path.join(os.tmpdir(), "runledger-mcp-"));
let logCount = 0;
/** A fresh file for a fixture's MCP_FIXTURE_LOG. */
const logFile = () => path.join(dir, `calls-${++logCount}.jsonl`);

const supervisors: McpSupervisor[] = [];
const httpFixtures: HttpFixture[] = [];
afterEach(async () => {
  await Promise.all(supervisors.splice(0).map((s) => s.close()));
});
afterAll(async () => {
  await Promise.all(httpFixtures.splice(0).map((f) => f.kill()));
  rmSync(dir, { recursive: true, force: true });
});

/** Fast retries: the specs wait for restarts, they should not wait long. */
const FAST: McpSupervisorOptions = { initialBackoffMs: 50, maxBackoffMs: 200, stopGraceMs: 300, startTimeoutMs: 15_000 };

/** A retry far beyond the test's end: a down server stays down. */
const SLOW_RETRY: McpSupervisorOptions = { initialBackoffMs: 60_000, maxBackoffMs: 60_000 };

function supervise(agents: AgentDefinition[], options: McpSupervisorOptions = {}) {
  const { records, logger } = memoryLogger();
  const supervisor = new McpSupervisor(agents, { ...FAST, logger, ...options });
  supervisors.push(supervisor);
  return { supervisor, records };
}

async function httpFixture(env: Record<string, string> = {}) {
  const fixture = await startHttpFixture(env);
  httpFixtures.push(fixture);
  return fixture;
}

function toolOf(supervisor: McpSupervisor, agent: string, name: string): StructuredToolInterface {
  const found = supervisor.toolsFor(agent).find((t) => t.tool.name === name);
  if (!found)
    throw new Error(
      `agent ${agent} has no tool ${name}; it has ${supervisor
        .toolsFor(agent)
        .map((t) => t.tool.name)
        .join(", ")}`,
    );
  return found.tool;
}

/** Runs one tool call the way the agent graph does: a ToolNode that turns thrown errors into tool messages. */
async function runToolNode(tools: StructuredToolInterface[], name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<ToolMessage> {
  const node = new ToolNode(tools, { handleToolErrors: true });
  const input = { messages: [new AIMessage({ content: "", tool_calls: [{ id: "call-1", name, args, type: "tool_call" }] })] };
  const output = (await node.invoke(input, signal ? { signal } : {})) as { messages: ToolMessage[] };
  expect(output.messages).toHaveLength(1);
  return output.messages[0]!;
}

describe("healthy servers over stdio and streamable HTTP", () => {
  const log = logFile();
  let web: HttpFixture;
  let supervisor: McpSupervisor;
  let records: ReturnType<typeof memoryLogger>["records"];
  const main = () =>
    chatAgent(
      "main",
      [
        stdioServer("files", { env: { MCP_FIXTURE_NAME: "files", MCP_FIXTURE_LOG: log }, tools: ["echo", "add", "whoami", "slow", "missing_tool"] }),
        httpServer("web", web.url, { headers: { "X-Api-Key": "k-123" }, tools: ["fail", "headers"] }),
      ],
      { tools: ["calculator"] },
    );

  beforeAll(async () => {
    web = await httpFixture({ MCP_FIXTURE_API_KEY: "k-123", MCP_FIXTURE_NAME: "web", MCP_FIXTURE_LOG: log });
    const { records: kept, logger } = memoryLogger();
    records = kept;
    supervisor = new McpSupervisor(
      [
        main(),
        // Its own instance of each server: a second process, a second HTTP session.
        chatAgent("open", [stdioServer("files")]),
        chatAgent("remote", [httpServer("web", web.url, { headers: { "X-Api-Key": "k-123" } })]),
        chatAgent("impatient", [stdioServer("files", { env: { MCP_FIXTURE_NAME: "files", MCP_FIXTURE_LOG: log }, timeoutMs: 300, tools: ["slow"] })]),
      ],
      { ...FAST, logger },
    );
    await supervisor.start();
  });
  afterAll(() => supervisor.close());

  it("lists and calls tools of both transports, sends the configured headers, and applies allow-lists", async () => {
    expect(supervisor.status("main").map((s) => [s.server, s.state, s.transport])).toEqual([
      ["files", "ready", "stdio"],
      ["web", "ready", "http"],
    ]);
    // In each server's own order; the allow-lists' order does not matter.
    expect(supervisor.toolsFor("main").map((t) => [t.tool.name, t.source])).toEqual([
      ["echo", "mcp:files"],
      ["add", "mcp:files"],
      ["whoami", "mcp:files"],
      ["slow", "mcp:files"],
      ["fail", "mcp:web"],
      ["headers", "mcp:web"],
    ]);
    // The allow-list named a tool the server does not offer: said in the log, not silently ignored.
    expect(records).toContainEqual(
      expect.objectContaining({ level: "warn", msg: "MCP server does not offer tools its allow-list names", server: "files", tools: ["missing_tool"] }),
    );

    expect(await toolOf(supervisor, "main", "add").invoke({ a: 2, b: 40 })).toBe("42");
    expect(await toolOf(supervisor, "main", "echo").invoke({ text: "héllo" })).toBe("héllo");
    const files = supervisor.status("main").find((s) => s.server === "files")!;
    expect(JSON.parse(await toolOf(supervisor, "main", "whoami").invoke({}))).toEqual({ name: "files", pid: files.pid });
    const headers = JSON.parse(await toolOf(supervisor, "main", "headers").invoke({})) as Record<string, string>;
    expect(headers["x-api-key"]).toBe("k-123");

    // The agent's whole tool set, built-ins first, and what the API shows of it.
    const agent = main();
    const all = agentTools(agent, supervisor);
    expect(all.map((t) => `${t.source}:${t.tool.name}`)).toEqual([
      "builtin:calculator",
      "mcp:files:echo",
      "mcp:files:add",
      "mcp:files:whoami",
      "mcp:files:slow",
      "mcp:web:fail",
      "mcp:web:headers",
    ]);
    const info = agentToolInfo(agent, supervisor);
    expect(info[0]).toEqual({
      name: "calculator",
      description: expect.stringContaining("arithmetic"),
      source: "builtin",
      inputSchema: {
        type: "object",
        properties: { expression: { type: "string", description: "the arithmetic expression" } },
        required: ["expression"],
        additionalProperties: false,
      },
    });
    expect(info.find((t) => t.name === "add")).toEqual({
      name: "add",
      description: "Adds two numbers.",
      source: "mcp:files",
      inputSchema: expect.objectContaining({ type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] }),
    });

    // An MCP tool error is a tool error the model reads.
    const failed = await runToolNode(
      all.map((t) => t.tool),
      "fail",
      {},
    );
    expect(failed.status).toBe("error");
    expect(failed.content).toContain("MCP tool 'fail' on server 'web' returned an error: the fail tool always fails");
  });

  it("picks up a changed tool list (notifications/tools/list_changed)", async () => {
    expect(await toolOf(supervisor, "open", "add_tool").invoke({ name: "late_tool" })).toBe("added late_tool");
    await waitForStatus(supervisor, "open", "files", (s) => s.toolNames.includes("late_tool"));
    expect(await toolOf(supervisor, "open", "late_tool").invoke({})).toBe("late_tool");
  });

  it.each([
    ["stdio", "main"],
    ["http", "remote"],
  ])("a run's abort signal stops a call at once and the %s server receives notifications/cancelled", async (transport, agent) => {
    const tool = toolOf(supervisor, agent, "slow");
    const label = `cancel-${transport}`;
    const controller = new AbortController();
    const settled = tool.invoke({ label }, { signal: controller.signal }).then(
      () => "resolved",
      (error: unknown) => error,
    );
    const started = await eventually(() => readFixtureLog(log).find((e) => e.event === "started" && e.label === label), "the slow call to start");

    const abortedAt = Date.now();
    controller.abort(new Error("run cancelled"));
    const outcome = await settled;
    // \`slow\` never returns by itself: settling at all, and promptly, is the abort's doing.
    expect(Date.now() - abortedAt).toBeLessThan(1_000);
    expect(outcome).toBeInstanceOf(Error);
    expect((outcome as Error).message).toBe("run cancelled");

    const cancelled = await eventually(
      () => readFixtureLog(log).find((e) => e.event === "cancelled" && e.label === label),
      "the server to see the cancellation",
    );
    expect(cancelled).toMatchObject({ requestId: started.requestId, pid: started.pid });
    expect(cancelled.reason).toContain("run cancelled");
    // The server lives on and answers the next call.
    expect(await toolOf(supervisor, agent, "echo").invoke({ text: "still here" })).toBe("still here");
    expect(supervisor.status(agent).map((s) => [s.state, s.restarts])).toEqual([["ready", 0]].concat(agent === "main" ? [["ready", 0]] : []));
  });

  it("a cancelled agent run leaves its MCP tool step pending (resumable), with no error stored for it", async () => {
    // The agent's graph shape: agent → tools → agent, tools through a ToolNode that turns errors into tool messages.
    let turns = 0;
    const graph = new StateGraph(MessagesAnnotation)
      .addNode("agent", async () => ({
        messages: [
          turns++ === 0
            ? new AIMessage({ content: "", tool_calls: [{ id: "call-slow", name: "slow", args: { label: "in-run" }, type: "tool_call" }] })
            : new AIMessage("done"),
        ],
      }))
      .addNode(
        "tools",
        new ToolNode(
          agentTools(main(), supervisor).map((t) => t.tool),
          { handleToolErrors: true },
        ),
      )
      .addEdge(START, "agent")
      .addConditionalEdges("agent", (state) => ((state.messages.at(-1) as AIMessage).tool_calls?.length ? "tools" : END), ["tools", END])
      .addEdge("tools", "agent")
      .compile({ checkpointer: new MemorySaver() });
    const thread = { configurable: { thread_id: "cancelled-run" } };
    const controller = new AbortController();
    const run = (async () => {
      for await (const _ of await graph.stream({ messages: [new HumanMessage("go")] }, { ...thread, signal: controller.signal, durability: "sync" }));
    })();
    const outcome = run.then(
      () => "completed",
      (error: unknown) => error,
    );
    await eventually(() => readFixtureLog(log).find((e) => e.event === "started" && e.label === "in-run"), "the tool call to start");
    controller.abort(new Error("run cancelled"));
    expect(((await outcome) as Error).message).toBe("run cancelled");
    await eventually(() => readFixtureLog(log).find((e) => e.event === "cancelled" && e.label === "in-run"), "the server to see the cancellation");

    const state = await graph.getState(thread);
    expect(state.next).toEqual(["tools"]);
    expect((state.values as { messages: BaseMessage[] }).messages.map((m) => m.getType())).toEqual(["human", "ai"]);
  });

  it("a call that outlasts the server's timeoutMs is a tool error, and the server is told to stop", async () => {
    const started = Date.now();
    const message = await runToolNode([toolOf(supervisor, "impatient", "slow")], "slow", { label: "too-slow" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(message.status).toBe("error");
    expect(message.content).toBe(
      'Error: MCP server "files" did not finish slow within 300 ms without reporting progress, so the call was cancelled\n Please fix your mistakes.',
    );
    const cancelled = await eventually(
      () => readFixtureLog(log).find((e) => e.event === "cancelled" && e.label === "too-slow"),
      "the server to see the cancellation",
    );
    expect(cancelled.reason).toContain("Request timed out");
  });

  it("an already aborted signal never reaches the server", async () => {
    const controller = new AbortController();
    controller.abort(new Error("too late"));
    await expect(toolOf(supervisor, "main", "slow").invoke({ label: "never" }, { signal: controller.signal })).rejects.toThrow("too late");
    expect(await toolOf(supervisor, "main", "echo").invoke({ text: "x" })).toBe("x"); // a later call has passed through the same pipe
    expect(readFixtureLog(log).filter((e) => e.label === "never")).toEqual([]);
  });
});

describe("from a config file to running servers", () => {
  it("resolves relative paths against the file's folder, substitutes ${NAME}, and passes none of runledger's own environment", async () => {
    const web = await httpFixture({ MCP_FIXTURE_API_KEY: "k-from-env" });
    const configDir = path.join(dir, "config");
    mkdirSync(path.join(configDir, "work"), { recursive: true });
    writeFileSync(
      path.join(configDir, "agents.json"),
      JSON.stringify({
        agents: {
          default: {
            type: "chat",
            tools: [],
            mcpServers: {
              files: {
                command: "node",
                args: [path.relative(configDir, STDIO_SERVER)],
                env: { MCP_FIXTURE_NAME: "${FIXTURE_NAME}" },
                tools: ["whoami", "env_var"],
              },
              scratch: { command: "node", args: [path.relative(path.join(configDir, "work"), STDIO_SERVER)], cwd: "work", tools: ["cwd"] },
              web: { url: web.url, headers: { "X-Api-Key": "${WEB_KEY}" }, tools: ["headers"] },
            },
          },
        },
      }),
    );
    process.env.RUNLEDGER_TEST_SECRET = "must not leak";
    const [agent] = loadAgentDefinitions(
      "config/agents.json",
      { model: "m", think: undefined, systemPrompt: "", recursionLimit: 5 },
      { cwd: dir, env: { FIXTURE_NAME: "from-config", WEB_KEY: "k-from-env" } },
    );
    const { supervisor } = supervise([agent!]);
    await supervisor.start();
    expect(supervisor.status().map((s) => s.state)).toEqual(["ready", "ready", "ready"]);

    const call = (name: string, args: Record<string, unknown> = {}) => toolOf(supervisor, "default", name).invoke(args) as Promise<string>;
    expect(JSON.parse(await call("whoami"))).toMatchObject({ name: "from-config" });
    expect(await call("cwd")).toBe(path.join(configDir, "work"));
    expect(JSON.parse(await call("headers"))).toMatchObject({ "x-api-key": "k-from-env" });
    expect(JSON.parse(await call("env_var", { name: "RUNLEDGER_TEST_SECRET" }))).toBeNull();
    expect(JSON.parse(await call("env_var", { name: "PATH" }))).toBe(process.env.PATH);
    delete process.env.RUNLEDGER_TEST_SECRET;
  });
});

describe("a server that dies", () => {
  it("crashing mid-call gives the model a tool error; the server is restarted, with none of its old processes left, and the next call works", async () => {
    const agent = chatAgent("main", [stdioServer("files")]);
    const { supervisor, records } = supervise([agent]);
    await supervisor.start();
    const before = supervisor.status("main")[0]!;
    const tools = agentTools(agent, supervisor).map((t) => t.tool);
    // A process the server started: it must not outlive the server's restart.
    const grandchild = Number((await runToolNode(tools, "spawn_child", {})).content);
    expect(processRuns(grandchild)).toBe(true);

    const message = await runToolNode(tools, "crash", {});
    expect(message.status).toBe("error");
    expect(message.content).toBe(
      `Error: MCP server "files" went away during the call to crash (the process exited with code 3); runledger restarts it\n Please fix your mistakes.`,
    );

    const after = await waitForStatus(supervisor, "main", "files", (s) => s.state === "ready" && s.restarts === 1);
    expect(after.pid).not.toBe(before.pid);
    expect(processRuns(before.pid!)).toBe(false);
    expect(processRuns(grandchild)).toBe(false);
    expect(records).toContainEqual(
      expect.objectContaining({ level: "warn", msg: "MCP server went down", server: "files", error: "the process exited with code 3", retryInMs: 50 }),
    );
    // The same tool objects work again: they call through the supervisor, not through the dead connection.
    const ok = await runToolNode(tools, "echo", { text: "back" });
    expect(ok.status).toBe("success");
    expect(ok.content).toBe("back");
  });

  it("a call while the server is down fails at once with a message saying so", async () => {
    const agent = chatAgent("main", [stdioServer("files")]);
    const { supervisor } = supervise([agent], SLOW_RETRY);
    await supervisor.start();
    const tools = agentTools(agent, supervisor).map((t) => t.tool);
    await runToolNode(tools, "crash", {});
    await waitForStatus(supervisor, "main", "files", (s) => s.state === "down");
    // Its tools stay, so the model can still call them and read why they fail.
    expect(supervisor.toolsFor("main").map((t) => t.tool.name)).toContain("echo");
    const started = Date.now();
    const message = await runToolNode(tools, "echo", { text: "x" });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(message.status).toBe("error");
    expect(message.content).toMatch(/^Error: MCP server "files" is not available: the process exited with code 3; runledger tries it again in (59|60) s\n/);
  });

  it("an HTTP server that dies mid-call gives a tool error; once it is back the supervisor reconnects", async () => {
    const port = await freePort();
    const first = await httpFixture({ MCP_FIXTURE_PORT: String(port) });
    const agent = chatAgent("main", [httpServer("web", first.url)]);
    const { supervisor } = supervise([agent]);
    await supervisor.start();
    const tools = agentTools(agent, supervisor).map((t) => t.tool);

    const message = await runToolNode(tools, "crash", {});
    expect(message.status).toBe("error");
    expect(message.content).toMatch(
      /^Error: MCP server "web" went away during the call to crash \(fetch failed \(UND_ERR_SOCKET\)\); runledger reconnects once it answers again\n/,
    );
    await first.exited;
    await waitForStatus(supervisor, "main", "web", (s) => s.state === "down");

    const second = await httpFixture({ MCP_FIXTURE_PORT: String(port) });
    await waitForStatus(supervisor, "main", "web", (s) => s.state === "ready");
    const whoami = JSON.parse(String((await runToolNode(tools, "whoami", {})).content)) as { pid: number };
    expect(whoami.pid).toBe(second.pid);
  });
});

describe("servers down at start-up", () => {
  it("start-up goes on, each failure is logged (with a stdio server's stderr), and the servers are retried", async () => {
    const web = await httpFixture({ MCP_FIXTURE_API_KEY: "k-123" });
    const { supervisor, records } = supervise(
      [
        chatAgent("main", [
          stdioServer("broken", { env: { MCP_FIXTURE_FAIL_START: "FILES_ROOT is not set" } }),
          stdioServer("absent", { command: "runledger-no-such-command" }),
          httpServer("locked", web.url), // no X-Api-Key header
          stdioServer("files", { env: { MCP_FIXTURE_NAME: "files", MCP_FIXTURE_STDOUT_NOISE: "1" } }),
        ]),
      ],
      SLOW_RETRY,
    );
    const started = Date.now();
    await supervisor.start();
    expect(supervisor.status("main").map((s) => [s.server, s.state, s.lastError])).toEqual([
      ["broken", "down", "the process exited with code 2 before it was ready"],
      ["absent", "down", 'command "runledger-no-such-command" not found (is it installed and on PATH?)'],
      ["locked", "down", 'Streamable HTTP error: Error POSTing to endpoint: {"error":"missing or wrong X-Api-Key"}'],
      ["files", "ready", undefined],
    ]);
    for (const status of supervisor.status("main").filter((s) => s.state === "down")) {
      expect(status.retryAt!.getTime()).toBeGreaterThanOrEqual(started + 60_000);
    }
    expect(supervisor.toolsFor("main").every((t) => t.source === "mcp:files")).toBe(true);
    // A stray line on stdout is skipped and reported, and the server keeps working.
    expect(await toolOf(supervisor, "main", "echo").invoke({ text: "ok" })).toBe("ok");
    expect(records.filter((r) => r.msg.startsWith("MCP server wrote something other than JSON-RPC to stdout"))).toHaveLength(1);
    expect(records).toContainEqual(
      expect.objectContaining({ level: "warn", msg: "MCP server failed to start", server: "broken", stderr: "FILES_ROOT is not set" }),
    );
    expect(records).toContainEqual(
      expect.objectContaining({
        level: "warn",
        msg: "some MCP servers are not available; their agents run without their tools until they come up",
        servers: ["main/broken", "main/absent", "main/locked"],
      }),
    );
  });

  it("an HTTP server that is not listening yet is connected once it is", async () => {
    const port = await freePort();
    const { supervisor, records } = supervise([chatAgent("main", [httpServer("web", `http://127.0.0.1:${port}/mcp`)])]);
    await supervisor.start();
    expect(supervisor.status("main")[0]).toMatchObject({ state: "down", lastError: "fetch failed (ECONNREFUSED)" });
    expect(supervisor.toolsFor("main")).toEqual([]);
    expect(records.some((r) => r.msg === "MCP server failed to start")).toBe(true);

    await httpFixture({ MCP_FIXTURE_PORT: String(port) });
    const ready = await waitForStatus(supervisor, "main", "web", (s) => s.state === "ready");
    expect(ready.restarts).toBeGreaterThanOrEqual(1);
    expect(await toolOf(supervisor, "main", "add").invoke({ a: 1, b: 1 })).toBe("2");
  });
});

describe("tool name clashes", () => {
  it("keep the built-in tool, then the tool of the server declared first, and are logged once", async () => {
    const agent = chatAgent(
      "main",
      [stdioServer("a", { env: { MCP_FIXTURE_NAME: "a", MCP_FIXTURE_EXTRA_TOOLS: "calculator" } }), stdioServer("b", { env: { MCP_FIXTURE_NAME: "b" } })],
      {
        tools: ["calculator"],
      },
    );
    const { supervisor, records } = supervise([agent]);
    await supervisor.start();
    const tools = agentTools(agent, supervisor);
    const names = tools.map((t) => t.tool.name);
    expect(new Set(names).size).toBe(names.length);
    expect(tools.find((t) => t.tool.name === "calculator")!.source).toBe("builtin");
    expect(tools.find((t) => t.tool.name === "echo")!.source).toBe("mcp:a");
    expect(tools.filter((t) => t.source === "mcp:b")).toEqual([]); // b offers nothing a does not
    const clashes = records.filter((r) => r.level === "error");
    expect(clashes.map((r) => r.msg)).toContain(
      'MCP tool "calculator" of server "a" is left out: agent "main" already has a tool of that name (built-in); give one of the servers a "tools" allow-list without it',
    );
    expect(clashes.map((r) => r.msg)).toContain(
      'MCP tool "echo" of server "b" is left out: agent "main" already has a tool of that name (from server "a"); give one of the servers a "tools" allow-list without it',
    );
    const logged = clashes.length;
    supervisor.status(); // nothing changes
    await toolOf(supervisor, "main", "add_tool").invoke({ name: "fresh" }); // a listing change rebuilds the tool set
    await waitForStatus(supervisor, "main", "a", (s) => s.toolNames.includes("fresh"));
    expect(records.filter((r) => r.level === "error")).toHaveLength(logged);
  });
});

describe("shutdown", () => {
  it("stops every server, the processes they started and stubborn ones, and no restart follows", async () => {
    const web = await httpFixture();
    const agents = [
      chatAgent("one", [stdioServer("files"), httpServer("web", web.url)]),
      chatAgent("two", [stdioServer("stubborn", { env: { MCP_FIXTURE_STUBBORN: "1" } })]),
    ];
    const { supervisor } = supervise(agents);
    await supervisor.start();
    const pids = supervisor.status().flatMap((s) => (s.pid === undefined ? [] : [s.pid]));
    expect(pids).toHaveLength(2);
    const grandchild = Number(await toolOf(supervisor, "one", "spawn_child").invoke({}));
    expect(processRuns(grandchild)).toBe(true);
    for (const pid of pids) expect(processRuns(pid)).toBe(true);

    const started = Date.now();
    await supervisor.close();
    // The stubborn server ignores the end of stdin and SIGTERM: one grace period for each, then SIGKILL.
    expect(Date.now() - started).toBeLessThan(5_000);
    for (const pid of [...pids, grandchild]) expect(processRuns(pid), `process ${pid}`).toBe(false);
    expect(supervisor.status().map((s) => s.state)).toEqual(["stopped", "stopped", "stopped"]);

    const message = await runToolNode([toolOf(supervisor, "one", "echo")], "echo", { text: "x" });
    expect(message.content).toContain('MCP server "files" is not available: runledger is shutting down');
    await supervisor.close(); // idempotent
    expect(web.process.exitCode).toBeNull(); // an HTTP server is not ours to stop; its session ended
  });
});
