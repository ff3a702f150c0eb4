// RUNLEDGER_CONFIG: the agents a config file declares, and the exact one-line
// error each kind of mistake produces (start-up prints it and stops).
import { mkdtempSync, mkdirSync, rmSync, writeFileSync, chmodSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.ts";
import { agentDefaultsFrom, DEFAULT_AGENT, type AgentDefaults } from "../src/agent/definitions.ts";
import { loadAgentDefinitions } from "../src/agent/agent-file.ts";
import { BUILTIN_TOOL_NAMES } from "../src/agent/kinds/chat.ts";
import { DEFAULT_MCP_TIMEOUT_MS } from "../src/agent/kinds/mcp-servers.ts";

const defaults: AgentDefaults = { model: "qwen3", think: undefined, systemPrompt: "env prompt", recursionLimit: 25 };
const dir = mkdtempSync(path.join(os.tmpdir(), "runledger-agents-"));
mkdirSync(path.join(dir, "graphs"));
mkdirSync(path.join(dir, "servers"));
writeFileSync(path.join(dir, "graphs", "g.ts"), "export default 1;\n");
writeFileSync(path.join(dir, "prompt.md"), "You answer in haiku.");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const env = { FILES_TOKEN: "s3cret", HOME: "/home/x" };
const FILE = "./agents.json";
const DEFAULT = { type: "chat" };

/** Writes the config (an object is written as JSON.stringify(value, null, 2), so lines are predictable) and loads it. */
function load(config: unknown) {
  writeFileSync(path.join(dir, "agents.json"), typeof config === "string" ? config : JSON.stringify(config, null, 2));
  return loadAgentDefinitions(FILE, defaults, { cwd: dir, env });
}

function errorOf(config: unknown): string {
  try {
    load(config);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).not.toContain("\n");
    return message;
  }
  throw new Error("expected a ConfigError");
}

describe("agent definitions without a config file", () => {
  it.each([undefined, "", "  "])("serve one agent, default, today's agent with both built-in tools (RUNLEDGER_CONFIG=%j)", (file) => {
    const agents = loadAgentDefinitions(file, { ...defaults, think: true });
    expect(agents).toEqual([
      {
        name: "default",
        type: "chat",
        description: expect.any(String),
        model: "qwen3",
        think: true,
        recursionLimit: 25,
        systemPrompt: "env prompt",
        tools: ["calculator", "current_time"],
        mcpServers: [],
        requireApproval: [],
        idempotentTools: [],
        retryInDoubt: false,
        origin: "the built-in default agent",
      },
    ]);
    expect(BUILTIN_TOOL_NAMES).toEqual(["calculator", "current_time"]);
  });

  it("take today's settings from the environment's configuration", () => {
    const config = loadConfig({ OLLAMA_MODEL: "llama3.2", OLLAMA_THINK: "false", SYSTEM_PROMPT: "Be brief.", AGENT_RECURSION_LIMIT: "7" });
    expect(loadAgentDefinitions(undefined, agentDefaultsFrom(config))[0]).toMatchObject({
      model: "llama3.2",
      think: false,
      systemPrompt: "Be brief.",
      recursionLimit: 7,
    });
  });
});

describe("agent definitions from a config file", () => {
  it("reads chat and graph agents, filling what is left out from the environment's settings, in the file's order", () => {
    const agents = load({
      agents: {
        support: {
          type: "chat",
          description: "Answers from the docs",
          model: "llama3.2",
          think: false,
          systemPromptFile: "prompt.md",
          recursionLimit: 8,
          tools: ["calculator"],
          mcpServers: {
            files: { command: "node", args: ["servers/files.mjs"], env: { TOKEN: "${FILES_TOKEN}", PLAIN: "a$b" }, tools: ["read_file", "write_file"] },
            local: { command: "./servers/run.sh", cwd: "servers" },
            remote: {
              url: "https://mcp.example.com/mcp",
              headers: { Authorization: "Bearer ${FILES_TOKEN}" },
              userHeaders: { "X-User-Id": "id", "X-Tenant": "claims.tenant" },
              timeoutMs: 5000,
            },
          },
          requireApproval: ["write_file", "calculator"],
          idempotentTools: ["read_file"],
        },
        default: DEFAULT,
        research: { type: "graph", description: "Plans, then answers", module: "graphs/g.ts", export: "graph" },
        plain: { type: "graph", module: "./graphs/g.ts" },
      },
    });
    expect(agents.map((a) => a.name)).toEqual(["support", "default", "research", "plain"]);
    const [support, def, research, plain] = agents;
    expect(support).toEqual({
      name: "support",
      type: "chat",
      description: "Answers from the docs",
      model: "llama3.2",
      think: false,
      recursionLimit: 8,
      systemPrompt: "You answer in haiku.",
      tools: ["calculator"],
      mcpServers: [
        {
          name: "files",
          transport: "stdio",
          command: "node",
          args: ["servers/files.mjs"],
          env: { TOKEN: "s3cret", PLAIN: "a$b" },
          cwd: dir,
          tools: ["read_file", "write_file"],
          timeoutMs: DEFAULT_MCP_TIMEOUT_MS,
          origin: "RUNLEDGER_CONFIG ./agents.json: agents.support.mcpServers.files",
        },
        {
          name: "local",
          transport: "stdio",
          command: path.join(dir, "servers", "run.sh"),
          args: [],
          env: {},
          cwd: path.join(dir, "servers"),
          tools: undefined,
          timeoutMs: DEFAULT_MCP_TIMEOUT_MS,
          origin: "RUNLEDGER_CONFIG ./agents.json: agents.support.mcpServers.local",
        },
        {
          name: "remote",
          transport: "http",
          url: "https://mcp.example.com/mcp",
          headers: { Authorization: "Bearer s3cret" },
          userHeaders: { "X-User-Id": { field: "id" }, "X-Tenant": { field: "claim", name: "tenant" } },
          forwardToken: false,
          tools: undefined,
          timeoutMs: 5000,
          origin: "RUNLEDGER_CONFIG ./agents.json: agents.support.mcpServers.remote",
        },
      ],
      requireApproval: ["write_file", "calculator"],
      idempotentTools: ["read_file"],
      retryInDoubt: false,
      origin: "RUNLEDGER_CONFIG ./agents.json: agents.support",
    });
    expect(def).toMatchObject({
      name: "default",
      type: "chat",
      description: "",
      model: "qwen3",
      think: undefined,
      systemPrompt: "env prompt",
      recursionLimit: 25,
      tools: BUILTIN_TOOL_NAMES,
      mcpServers: [],
    });
    expect(research).toEqual({
      name: "research",
      type: "graph",
      description: "Plans, then answers",
      model: "qwen3",
      think: undefined,
      recursionLimit: 25,
      module: path.join(dir, "graphs", "g.ts"),
      moduleLabel: "graphs/g.ts",
      export: "graph",
      origin: "RUNLEDGER_CONFIG ./agents.json: agents.research",
    });
    expect(plain).toMatchObject({ export: "default", module: path.join(dir, "graphs", "g.ts") });
  });

  it("gives a chat agent no built-in tools with an empty list, and keeps an inline system prompt (even an empty one)", () => {
    const [agent] = load({ agents: { default: { type: "chat", tools: [], systemPrompt: "" } } });
    expect(agent).toMatchObject({ tools: [], systemPrompt: "" });
  });

  it("resolves RUNLEDGER_CONFIG against the working directory and relative paths against the file's folder", () => {
    mkdirSync(path.join(dir, "nested"), { recursive: true });
    writeFileSync(path.join(dir, "nested", "p.txt"), "nested prompt");
    writeFileSync(path.join(dir, "nested", "agents.json"), JSON.stringify({ agents: { default: { type: "chat", systemPromptFile: "p.txt" } } }));
    const [agent] = loadAgentDefinitions("nested/agents.json", defaults, { cwd: dir, env });
    expect(agent).toMatchObject({ systemPrompt: "nested prompt" });
  });
});

describe("a bad config file stops start-up with one line naming the file, the path and the problem", () => {
  const cases: [string, unknown, string][] = [
    // The file itself
    ["an empty file", "", "RUNLEDGER_CONFIG ./agents.json: invalid JSON: the file is empty (line 1, column 1)"],
    [
      "a trailing comma",
      '{\n  "agents": {\n    "default": {"type": "chat"},\n  }\n}',
      "RUNLEDGER_CONFIG ./agents.json: invalid JSON: trailing comma before } (line 4, column 3)",
    ],
    [
      "a missing comma",
      '{\n  "agents": {\n    "default": {"type": "chat"}\n    "x": {}\n  }\n}',
      'RUNLEDGER_CONFIG ./agents.json: invalid JSON: expected "," or "}" after the value of "default", found """ (line 4, column 5)',
    ],
    ["single quotes", "{'agents': {}}", 'RUNLEDGER_CONFIG ./agents.json: invalid JSON: expected a key in double quotes, found "\'" (line 1, column 2)'],
    [
      "a bad literal",
      '{"agents": {"default": {"type": "chat", "think": tru}}}',
      'RUNLEDGER_CONFIG ./agents.json: invalid JSON: expected a value, found "t" (line 1, column 50)',
    ],
    [
      "text after the value",
      '{"agents": {}} x',
      'RUNLEDGER_CONFIG ./agents.json: invalid JSON: unexpected "x" after the end of the JSON value (line 1, column 16)',
    ],
    ["an unterminated string", '{"agents": {"default', "RUNLEDGER_CONFIG ./agents.json: invalid JSON: unterminated string (line 1, column 13)"],
    [
      "a duplicate agent",
      '{\n  "agents": {\n    "default": {"type": "chat"},\n    "default": {"type": "chat", "tools": []}\n  }\n}',
      'RUNLEDGER_CONFIG ./agents.json: agents.default: the key "default" appears twice (line 4, column 5); JSON would keep only the last one, silently',
    ],
    ["not an object", [], "RUNLEDGER_CONFIG ./agents.json: the file: expected an object, got an array (line 1, column 1)"],
    ["no agents key", {}, "RUNLEDGER_CONFIG ./agents.json: agents: is required"],
    ["agents not an object", { agents: ["default"] }, "RUNLEDGER_CONFIG ./agents.json: agents: expected an object, got an array (line 2, column 13)"],
    [
      "an unknown top-level key",
      { agents: { default: DEFAULT }, agent: {} },
      'RUNLEDGER_CONFIG ./agents.json: agent: unknown key (did you mean "agents"?); known keys: agents (line 7)',
    ],
    [
      "no default agent",
      { agents: { support: DEFAULT } },
      'RUNLEDGER_CONFIG ./agents.json: agents: no agent named "default": startRun without an agent runs it, so declare it (today\'s agent is "default": {"type": "chat"}) (line 2, column 13)',
    ],
    // Agents
    [
      "an agent name with a space",
      { agents: { default: DEFAULT, "my agent": DEFAULT } },
      'RUNLEDGER_CONFIG ./agents.json: agents["my agent"]: agent names use letters, digits, _ and - only, starting with a letter, at most 64 characters (line 6)',
    ],
    [
      "an agent name starting with a digit",
      { agents: { default: DEFAULT, "1st": DEFAULT } },
      'RUNLEDGER_CONFIG ./agents.json: agents["1st"]: agent names use letters, digits, _ and - only, starting with a letter, at most 64 characters (line 6)',
    ],
    [
      "an agent that is not an object",
      { agents: { default: "chat" } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default: expected an object, got the string "chat" (line 3, column 16)',
    ],
    [
      "an agent without a type",
      { agents: { default: { model: "x" } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.type: expected "chat" or "graph", but it is missing',
    ],
    [
      "an unknown agent type",
      { agents: { default: { type: "agent" } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.type: expected "chat" or "graph", got the string "agent" (line 4, column 15)',
    ],
    [
      "a misspelt agent key",
      { agents: { default: { type: "chat", sytemPrompt: "x" } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.sytemPrompt: unknown key (did you mean "systemPrompt"?); known keys: type, description, model, think, recursionLimit, concurrency, retention, webhook, systemPrompt, systemPromptFile, tools, mcpServers, requireApproval, idempotentTools, retryInDoubt (line 5)',
    ],
    [
      "a chat-only key on a graph agent",
      { agents: { default: DEFAULT, g: { type: "graph", module: "graphs/g.ts", tools: [] } } },
      "RUNLEDGER_CONFIG ./agents.json: agents.g.tools: unknown key; known keys: type, description, model, think, recursionLimit, concurrency, retention, webhook, module, export (line 9)",
    ],
    [
      "a wrong type",
      { agents: { default: { type: "chat", think: "yes" } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.think: expected true or false, got the string "yes" (line 5, column 16)',
    ],
    [
      "a fractional recursion limit",
      { agents: { default: { type: "chat", recursionLimit: 2.5 } } },
      "RUNLEDGER_CONFIG ./agents.json: agents.default.recursionLimit: expected a whole number, got the fraction 2.5 (line 5, column 25)",
    ],
    [
      "a zero recursion limit",
      { agents: { default: { type: "chat", recursionLimit: 0 } } },
      "RUNLEDGER_CONFIG ./agents.json: agents.default.recursionLimit: must be at least 1, got the number 0 (line 5, column 25)",
    ],
    [
      "a zero concurrency",
      { agents: { default: { type: "chat", concurrency: 0 } } },
      "RUNLEDGER_CONFIG ./agents.json: agents.default.concurrency: must be at least 1, got the number 0 (line 5, column 22)",
    ],
    [
      "several problems",
      { agents: { default: { type: "chat", model: 1, think: 2 } } },
      "RUNLEDGER_CONFIG ./agents.json: agents.default.model: expected a string, got the number 1 (line 5, column 16) (and 1 more problem)",
    ],
    [
      "an empty model",
      { agents: { default: { type: "chat", model: " " } } },
      "RUNLEDGER_CONFIG ./agents.json: agents.default.model: must not be empty (line 5, column 16)",
    ],
    [
      "both prompt keys",
      { agents: { default: { type: "chat", systemPrompt: "a", systemPromptFile: "prompt.md" } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.systemPromptFile: an agent has "systemPrompt" or "systemPromptFile", not both (line 6, column 27)',
    ],
    [
      "an unreadable prompt file",
      { agents: { default: { type: "chat", systemPromptFile: "missing.md" } } },
      "RUNLEDGER_CONFIG ./agents.json: agents.default.systemPromptFile: missing.md cannot be read: no such file or folder (line 5, column 27)",
    ],
    [
      "a prompt file that is a folder",
      { agents: { default: { type: "chat", systemPromptFile: "graphs" } } },
      "RUNLEDGER_CONFIG ./agents.json: agents.default.systemPromptFile: graphs cannot be read: it is a folder (line 5, column 27)",
    ],
    [
      "an unknown built-in tool",
      { agents: { default: { type: "chat", tools: ["calculator", "web_search"] } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.tools[1]: "web_search" is not a built-in tool (built-in tools: calculator, current_time; MCP tools come from "mcpServers") (line 7, column 9)',
    ],
    [
      "a built-in tool listed twice",
      { agents: { default: { type: "chat", tools: ["calculator", "calculator"] } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.tools[1]: "calculator" is listed twice (line 7, column 9)',
    ],
    [
      "requireApproval naming a tool the agent does not have",
      {
        agents: {
          default: { type: "chat", tools: ["calculator"], mcpServers: { files: { command: "node", tools: ["read_file"] } }, requireApproval: ["delete_file"] },
        },
      },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.requireApproval[0]: "delete_file" is not a tool of this agent (its known tools: calculator, read_file); an MCP tool is known here only when its server\'s "tools" allow-list names it (line 17, column 9)',
    ],
    [
      "requireApproval naming a built-in tool the agent left out",
      { agents: { default: { type: "chat", tools: [], requireApproval: ["calculator"] } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.requireApproval[0]: "calculator" is not a tool of this agent (it has no known tools); an MCP tool is known here only when its server\'s "tools" allow-list names it (line 7, column 9)',
    ],
    [
      "requireApproval naming a tool of a server without an allow-list",
      { agents: { default: { type: "chat", tools: [], mcpServers: { files: { command: "node" } }, requireApproval: ["write_file"] } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.requireApproval[0]: "write_file" is not a tool of this agent (it has no known tools); an MCP tool is known here only when its server\'s "tools" allow-list names it (line 12, column 9)',
    ],
    [
      "idempotentTools naming a tool the agent does not have",
      { agents: { default: { type: "chat", tools: ["calculator"], idempotentTools: ["pay_invoice"] } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.idempotentTools[0]: "pay_invoice" is not a tool of this agent (its known tools: calculator); an MCP tool is known here only when its server\'s "tools" allow-list names it (line 9, column 9)',
    ],
    [
      "retryInDoubt that is not a boolean",
      { agents: { default: { type: "chat", retryInDoubt: "yes" } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.retryInDoubt: expected true or false, got the string "yes" (line 5, column 23)',
    ],
    // Graph agents
    [
      "a graph module that does not exist",
      { agents: { default: DEFAULT, g: { type: "graph", module: "graphs/missing.ts" } } },
      "RUNLEDGER_CONFIG ./agents.json: agents.g.module: graphs/missing.ts does not exist (no such file or folder) (line 8, column 17)",
    ],
    [
      "a graph module that is a folder",
      { agents: { default: DEFAULT, g: { type: "graph", module: "graphs" } } },
      "RUNLEDGER_CONFIG ./agents.json: agents.g.module: graphs is not a file (line 8, column 17)",
    ],
    ["a graph agent without a module", { agents: { default: DEFAULT, g: { type: "graph" } } }, "RUNLEDGER_CONFIG ./agents.json: agents.g.module: is required"],
    [
      "an empty export name",
      { agents: { default: DEFAULT, g: { type: "graph", module: "graphs/g.ts", export: "" } } },
      "RUNLEDGER_CONFIG ./agents.json: agents.g.export: must not be empty (line 9, column 17)",
    ],
    // MCP servers
    [
      "a server command that is not a string",
      { agents: { default: { type: "chat", mcpServers: { files: { command: ["node"] } } } } },
      "RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers.files.command: expected a string, got an array (line 7, column 22)",
    ],
    [
      "a misspelt server key",
      { agents: { default: { type: "chat", mcpServers: { files: { comand: "node" } } } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers.files.comand: unknown key (did you mean "command"?); known keys: command, args, env, cwd, url, headers, userHeaders, forwardToken, tools, timeoutMs (line 7)',
    ],
    [
      "a server with both command and url",
      { agents: { default: { type: "chat", mcpServers: { files: { command: "node", url: "http://127.0.0.1:1/mcp" } } } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers.files.url: a server has "command" (stdio) or "url" (streamable HTTP), not both (line 8, column 18)',
    ],
    [
      "a server with neither",
      { agents: { default: { type: "chat", mcpServers: { files: { tools: ["a"] } } } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers.files: a server needs "command" (stdio) or "url" (streamable HTTP) (line 6, column 18)',
    ],
    [
      "headers on a stdio server",
      { agents: { default: { type: "chat", mcpServers: { files: { command: "node", headers: {} } } } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers.files.headers: "headers" is for HTTP servers; this one has no "url" (line 8, column 22)',
    ],
    [
      "args on an HTTP server",
      { agents: { default: { type: "chat", mcpServers: { web: { url: "http://127.0.0.1:1/mcp", args: [] } } } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers.web.args: "args" is for stdio servers; this one has "url" (line 8, column 19)',
    ],
    [
      "a URL that is not http",
      { agents: { default: { type: "chat", mcpServers: { web: { url: "ftp://example.com" } } } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers.web.url: expected an http or https URL such as https://mcp.example.com/mcp, got "ftp://example.com" (line 7, column 18)',
    ],
    [
      "a header value that is not a string",
      { agents: { default: { type: "chat", mcpServers: { web: { url: "http://127.0.0.1:1/mcp", headers: { "X-Key": 1 } } } } } },
      "RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers.web.headers.X-Key: expected a string, got the number 1 (line 9, column 22)",
    ],
    [
      "a bad header name",
      { agents: { default: { type: "chat", mcpServers: { web: { url: "http://127.0.0.1:1/mcp", headers: { "X Key": "1" } } } } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers.web.headers["X Key"]: "X Key" is not a valid HTTP header name (line 9)',
    ],
    [
      "a user header naming something the caller does not have",
      { agents: { default: { type: "chat", mcpServers: { web: { url: "http://127.0.0.1:1/mcp", userHeaders: { "X-User": "email" } } } } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers.web.userHeaders.X-User: expected "id", "role" or "claims.<name>" (what the header carries from the caller), got "email" (line 9, column 23)',
    ],
    [
      "forwardToken beside a configured Authorization header",
      {
        agents: {
          default: { type: "chat", mcpServers: { web: { url: "http://127.0.0.1:1/mcp", headers: { Authorization: "Bearer x" }, forwardToken: true } } },
        },
      },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers.web.forwardToken: "forwardToken" sends the caller\'s Authorization header; this server already sets one in "headers" or "userHeaders" (line 11, column 27)',
    ],
    [
      "userHeaders on a stdio server",
      { agents: { default: { type: "chat", mcpServers: { files: { command: "node", userHeaders: { "X-User": "id" } } } } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers.files.userHeaders: "userHeaders" is for HTTP servers; this one has no "url" (line 8, column 26)',
    ],
    [
      "an env value that is not a string",
      { agents: { default: { type: "chat", mcpServers: { files: { command: "node", env: { DEBUG: true } } } } } },
      "RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers.files.env.DEBUG: expected a string, got true (line 9, column 22)",
    ],
    [
      "a missing environment variable",
      { agents: { default: { type: "chat", mcpServers: { files: { command: "node", env: { TOKEN: "${NOPE}" } } } } } },
      "RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers.files.env.TOKEN: refers to the environment variable NOPE, which is not set (line 9, column 22)",
    ],
    [
      "a cwd that does not exist",
      { agents: { default: { type: "chat", mcpServers: { files: { command: "node", cwd: "nowhere" } } } } },
      "RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers.files.cwd: nowhere does not exist (no such file or folder) (line 8, column 18)",
    ],
    [
      "an empty command",
      { agents: { default: { type: "chat", mcpServers: { files: { command: "" } } } } },
      "RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers.files.command: must not be empty (line 7, column 22)",
    ],
    [
      "a server name with a dot",
      { agents: { default: { type: "chat", mcpServers: { "my.files": { command: "node" } } } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers["my.files"]: server names use letters, digits, _ and - only, starting with a letter, at most 64 characters (line 6)',
    ],
    [
      "an empty allow-list",
      { agents: { default: { type: "chat", mcpServers: { files: { command: "node", tools: [] } } } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers.files.tools: an empty allow-list lets no tool through; list tool names, or leave "tools" out for all of them (line 8, column 20)',
    ],
    [
      "a zero timeout",
      { agents: { default: { type: "chat", mcpServers: { files: { command: "node", timeoutMs: 0 } } } } },
      "RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers.files.timeoutMs: must be at least 1, got the number 0 (line 8, column 24)",
    ],
    [
      "an allow-list naming a built-in tool of the agent",
      { agents: { default: { type: "chat", mcpServers: { calc: { command: "node", tools: ["calculator"] } } } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers.calc.tools[0]: "calculator" is also a built-in tool of this agent; tool names must be unique within an agent (line 9, column 13)',
    ],
    [
      "two allow-lists naming one tool",
      { agents: { default: { type: "chat", mcpServers: { a: { command: "node", tools: ["echo"] }, b: { command: "node", tools: ["add", "echo"] } } } } },
      'RUNLEDGER_CONFIG ./agents.json: agents.default.mcpServers.b.tools[1]: "echo" is also allowed from server "a"; tool names must be unique within an agent (line 16, column 13)',
    ],
  ];

  it.each(cases)("%s", (_name, config, message) => {
    expect(errorOf(config)).toBe(message);
  });

  it("an allow-list may name a built-in tool the agent does not have", () => {
    const [agent] = load({
      agents: {
        default: { type: "chat", tools: ["current_time"], mcpServers: { calc: { command: "node", tools: ["calculator"] } }, requireApproval: ["calculator"] },
      },
    });
    expect(agent).toMatchObject({ tools: ["current_time"], requireApproval: ["calculator"] });
  });

  it("a file that does not exist", () => {
    expect(() => loadAgentDefinitions("./nope.json", defaults, { cwd: dir })).toThrow(
      new ConfigError("RUNLEDGER_CONFIG ./nope.json: cannot be read: no such file or folder"),
    );
  });

  it("a file that cannot be read", () => {
    if (process.getuid?.() === 0) {
      // root reads any file whatever its mode: a folder is the unreadable file it cannot get past.
      expect(() => loadAgentDefinitions("./graphs", defaults, { cwd: dir })).toThrow(
        new ConfigError("RUNLEDGER_CONFIG ./graphs: cannot be read: it is a folder"),
      );
      return;
    }
    const locked = path.join(dir, "locked.json");
    writeFileSync(locked, "{}");
    chmodSync(locked, 0o000);
    expect(() => loadAgentDefinitions("./locked.json", defaults, { cwd: dir })).toThrow(
      new ConfigError("RUNLEDGER_CONFIG ./locked.json: cannot be read: permission denied"),
    );
  });
});

it("DEFAULT_AGENT is the name startRun uses without an agent", () => {
  expect(DEFAULT_AGENT).toBe("default");
});
