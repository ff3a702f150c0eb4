// The agents runledger serves, from the JSON file RUNLEDGER_CONFIG names (or,
// without one, today's single built-in agent). The file is read and checked once,
// at start-up; any problem stops start-up with a ConfigError whose message is one
// line naming the file, the path inside it and what is wrong.
//
// The file (keys fixed; every key is optional unless marked required):
//
//   {"agents": {                              required; at least the agent "default"
//     "NAME": {                               letters, digits, _ and -, starting with a letter
//       "type": "chat",                       required: a tool-calling agent (the built-in graph)
//       "description": "...",
//       "model": "qwen3",                     default OLLAMA_MODEL
//       "think": true,                        default OLLAMA_THINK
//       "systemPrompt": "..." | "systemPromptFile": "prompt.md",   default SYSTEM_PROMPT(_FILE)
//       "recursionLimit": 25,                 default AGENT_RECURSION_LIMIT
//       "tools": ["calculator"],              built-in tools; default all of them, [] for none
//       "mcpServers": {"SERVER": {            letters, digits, _ and -, starting with a letter
//         "command": "node", "args": [], "env": {}, "cwd": ".",    a stdio server, or
//         "url": "https://...", "headers": {},                      a streamable HTTP server;
//         "tools": ["read_file"],             allow-list; default every tool the server offers
//         "timeoutMs": 60000                  longest wait for one call without progress
//       }},
//       "requireApproval": ["write_file"]     tools whose calls need a person's approval
//     },
//     "NAME": {
//       "type": "graph",                      required: a custom LangGraph graph
//       "description": "...",
//       "module": "graphs/research.ts",       required
//       "export": "graph",                    default "default"
//       "model": "...", "think": false, "recursionLimit": 25        as for chat agents
//     }}}
//
// Rules a reader of the file can rely on:
// - Unknown keys are errors (a typo never passes silently), and so are duplicate keys.
// - A key left out means today's behaviour: the environment's model, think setting,
//   system prompt and recursion limit, and for a chat agent both built-in tools.
// - The file must declare an agent named "default": startRun without an agent runs
//   it, and runledger never adds an agent the file does not show. Today's agent is
//   `"default": {"type": "chat"}`.
// - Relative paths (systemPromptFile, module, cwd, and a command containing "/")
//   resolve against the config file's folder. A stdio server runs in `cwd`,
//   default that folder, so its args may name files relative to it.
// - `${NAME}` in an MCP server's `env` and `headers` values is replaced by the
//   environment variable NAME of runledger's process (a missing one is an error),
//   so secrets can stay out of the file. Nothing else of runledger's environment
//   reaches a stdio server: it gets PATH, HOME, LOGNAME, SHELL, TERM and USER
//   (the MCP SDK's safe defaults) plus its `env`.
// - MCP tools keep the names their servers give them. Two tools of one agent must
//   not share a name: where the file shows a clash (an allow-list naming a tool of
//   another allow-list or a built-in tool of the agent) it is an error here; a
//   clash only the servers' live listings reveal is resolved by keeping the
//   built-in tool, then the tool of the server declared first, and logged.
// - `requireApproval` may name only tools known from the file: the agent's
//   built-in tools and its servers' allow-lists. A misspelt name would otherwise
//   let a dangerous tool run unapproved.
// - Agents keep the file's order; the API lists them in that order.
// - `timeoutMs` on a server is an addition to the fixed keys; see DEFAULT_MCP_TIMEOUT_MS.
//
// How runledger wires the agent modules together:
//   start-up   const agents = loadAgentDefinitions(env.RUNLEDGER_CONFIG, agentDefaultsFrom(config));
//              const graphs = await loadGraphAgents(agents);      // graph-module.ts; ConfigError stops start-up too
//              const mcp = new McpSupervisor(agents, { logger }); // mcp/
//              await mcp.start();                                 // never throws; bounded by its start timeout
//   chat run   agentTools(agent, mcp) (tool-info.ts) for the graph's model binding and ToolNode, called per
//              run; agent.systemPrompt, model, think and recursionLimit instead of the environment's.
//   graph run  graphs.get(agent.name).compile({ checkpointer }), the run's model in configurable.model.
//   API        agents: name, description, type, model, and agentToolInfo(agent, mcp) for chat agents;
//              mcp.status(agent.name) tells which servers are up.
//   shutdown   await mcp.close() after runs are stopped: it ends every MCP server and its processes.
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { ConfigError, type Config } from "../config.ts";
import { builtinTools } from "./tools.ts";
import { JsonSyntaxError, parseJsonWithLocations, type JsonLocation, type JsonPath } from "./json-locations.ts";

/** The agent startRun uses when it names none. */
export const DEFAULT_AGENT = "default";

/** The built-in tools' names, as `tools` accepts them. */
export const BUILTIN_TOOL_NAMES: readonly string[] = builtinTools().map((t) => t.name);

/** The MCP SDK's own default for one request: what a server's calls wait without `timeoutMs`. */
export const DEFAULT_MCP_TIMEOUT_MS = 60_000;

/** Today's environment-driven settings; every agent key left out takes its value from here. */
export interface AgentDefaults {
  /** `OLLAMA_MODEL`. */
  model: string;
  /** `OLLAMA_THINK`; undefined leaves the model's default. */
  think: boolean | undefined;
  /** `SYSTEM_PROMPT`, `SYSTEM_PROMPT_FILE`'s contents, or the built-in prompt. */
  systemPrompt: string;
  /** `AGENT_RECURSION_LIMIT`. */
  recursionLimit: number;
}

/** The environment's settings, as loadConfig read them. */
export function agentDefaultsFrom(config: Pick<Config, "ollamaModel" | "ollamaThink" | "systemPrompt" | "recursionLimit">): AgentDefaults {
  return { model: config.ollamaModel, think: config.ollamaThink, systemPrompt: config.systemPrompt, recursionLimit: config.recursionLimit };
}

interface AgentBase {
  name: string;
  description: string;
  /** The Ollama model each run of this agent talks to. */
  model: string;
  think: boolean | undefined;
  /** LangGraph super-steps per run. */
  recursionLimit: number;
  /**
   * Where the agent was declared, as a message prefix for problems found after
   * loading (a graph module that fails to import, a tool name clash), e.g.
   * `RUNLEDGER_CONFIG ./agents.json: agents.support`.
   */
  origin: string;
}

export interface ChatAgentDefinition extends AgentBase {
  type: "chat";
  /** Prepended to every model call, never stored in the thread. */
  systemPrompt: string;
  /** Built-in tools this agent has (names from BUILTIN_TOOL_NAMES), in the file's order. */
  tools: string[];
  /** Its MCP servers, in the file's order (which decides name clashes). */
  mcpServers: McpServerDefinition[];
  /** Tools whose calls wait for a person's approval; each is a built-in tool of the agent or in an allow-list. */
  requireApproval: string[];
}

export interface GraphAgentDefinition extends AgentBase {
  type: "graph";
  /** Absolute path of the module (see graph-module.ts for what it must export). */
  module: string;
  /** `module` as the file wrote it, for messages. */
  moduleLabel: string;
  /** The export to take: a StateGraph, or a function returning one. */
  export: string;
}

export type AgentDefinition = ChatAgentDefinition | GraphAgentDefinition;

interface McpServerBase {
  name: string;
  /** Allow-list: only these of the server's tools reach the agent; undefined means all of them. */
  tools: string[] | undefined;
  /** How long one tool call may go without a result or a progress notification before it fails. */
  timeoutMs: number;
  /** e.g. `RUNLEDGER_CONFIG ./agents.json: agents.support.mcpServers.files`. */
  origin: string;
}

export interface StdioMcpServerDefinition extends McpServerBase {
  transport: "stdio";
  /** A program on PATH, or an absolute path. */
  command: string;
  args: string[];
  /** Variables added to the safe defaults, `${NAME}` already substituted. */
  env: Record<string, string>;
  /** Absolute working directory of the process. */
  cwd: string;
}

export interface HttpMcpServerDefinition extends McpServerBase {
  transport: "http";
  /** The streamable HTTP endpoint, e.g. https://mcp.example.com/mcp. */
  url: string;
  /** Sent with every request (an API key, say), `${NAME}` already substituted. */
  headers: Record<string, string>;
}

export type McpServerDefinition = StdioMcpServerDefinition | HttpMcpServerDefinition;

export interface LoadAgentDefinitionsOptions {
  /** What relative RUNLEDGER_CONFIG paths resolve against; default process.cwd(). */
  cwd?: string;
  /** Where `${NAME}` references are looked up; default process.env. */
  env?: Record<string, string | undefined>;
}

const NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
const NAME_RULE = "letters, digits, _ and - only, starting with a letter, at most 64 characters";
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const stringList = z.array(z.string());
const stringMap = z.record(z.string(), z.string());

const mcpServerSchema = z.strictObject({
  command: z.string().optional(),
  args: stringList.optional(),
  env: stringMap.optional(),
  cwd: z.string().optional(),
  url: z.string().optional(),
  headers: stringMap.optional(),
  tools: stringList.optional(),
  timeoutMs: z.number().int().min(1).max(86_400_000).optional(),
});

const modelKeys = {
  description: z.string().optional(),
  model: z.string().optional(),
  think: z.boolean().optional(),
  recursionLimit: z.number().int().min(1).max(10_000).optional(),
};

const chatSchema = z.strictObject({
  type: z.literal("chat"),
  ...modelKeys,
  systemPrompt: z.string().optional(),
  systemPromptFile: z.string().optional(),
  tools: stringList.optional(),
  mcpServers: z.record(z.string(), mcpServerSchema).optional(),
  requireApproval: stringList.optional(),
});

const graphSchema = z.strictObject({
  type: z.literal("graph"),
  ...modelKeys,
  module: z.string(),
  export: z.string().optional(),
});

const fileSchema = z.strictObject({
  agents: z.record(z.string(), z.discriminatedUnion("type", [chatSchema, graphSchema])),
});

type FileShape = z.infer<typeof fileSchema>;
type ChatShape = z.infer<typeof chatSchema>;
type GraphShape = z.infer<typeof graphSchema>;
type ServerShape = z.infer<typeof mcpServerSchema>;

const KNOWN_KEYS: Record<string, readonly string[]> = {
  file: Object.keys(fileSchema.shape),
  chat: Object.keys(chatSchema.shape),
  graph: Object.keys(graphSchema.shape),
  server: Object.keys(mcpServerSchema.shape),
};

/** The agent runledger serves without a config file: today's agent, with both built-in tools. */
export function builtinDefaultAgent(defaults: AgentDefaults): ChatAgentDefinition {
  return {
    name: DEFAULT_AGENT,
    type: "chat",
    description: "The built-in tool-calling agent, with a calculator and the current time.",
    model: defaults.model,
    think: defaults.think,
    recursionLimit: defaults.recursionLimit,
    systemPrompt: defaults.systemPrompt,
    tools: [...BUILTIN_TOOL_NAMES],
    mcpServers: [],
    requireApproval: [],
    origin: "the built-in default agent",
  };
}

/**
 * The agents to serve. `file` is RUNLEDGER_CONFIG as given (unset or empty: no
 * file); without a file the one agent is `default`, today's agent. Throws
 * ConfigError with a one-line message on any problem with the file.
 */
export function loadAgentDefinitions(file: string | undefined, defaults: AgentDefaults, options: LoadAgentDefinitionsOptions = {}): AgentDefinition[] {
  if (file === undefined || file.trim() === "") return [builtinDefaultAgent(defaults)];
  return new FileReader(file, path.resolve(options.cwd ?? process.cwd(), file), defaults, options.env ?? process.env).read();
}

/** One read of one config file; `fail` turns a problem at a path into the one-line ConfigError. */
class FileReader {
  readonly #label: string;
  readonly #folder: string;
  #locate: (p: JsonPath) => JsonLocation | undefined = () => undefined;

  constructor(
    file: string,
    private readonly absolute: string,
    private readonly defaults: AgentDefaults,
    private readonly env: Record<string, string | undefined>,
  ) {
    this.#label = `RUNLEDGER_CONFIG ${file}`;
    this.#folder = path.dirname(absolute);
  }

  read(): AgentDefinition[] {
    let text: string;
    try {
      text = readFileSync(this.absolute, "utf8");
    } catch (error) {
      throw new ConfigError(`${this.#label}: cannot be read: ${ioReason(error)}`);
    }
    let raw: unknown;
    try {
      const parsed = parseJsonWithLocations(text);
      raw = parsed.value;
      this.#locate = parsed.locate;
    } catch (error) {
      if (!(error instanceof JsonSyntaxError)) throw error;
      if (error.kind === "duplicate") {
        throw new ConfigError(`${this.#label}: ${formatPath(error.path)}: ${error.message}; JSON would keep only the last one, silently`);
      }
      throw new ConfigError(`${this.#label}: invalid JSON: ${error.message}`);
    }
    const result = fileSchema.safeParse(raw);
    if (!result.success) this.#failZod(result.error.issues, raw);
    const shape = (result as { data: FileShape }).data;

    const agents: AgentDefinition[] = [];
    for (const [name, agent] of Object.entries(shape.agents)) {
      const at = ["agents", name];
      if (!NAME.test(name)) this.fail(at, `agent names use ${NAME_RULE}`, { key: true });
      agents.push(agent.type === "chat" ? this.#chat(name, agent, at) : this.#graph(name, agent, at));
    }
    if (!agents.some((a) => a.name === DEFAULT_AGENT)) {
      this.fail(["agents"], `no agent named "${DEFAULT_AGENT}": startRun without an agent runs it, so declare it (today's agent is "${DEFAULT_AGENT}": {"type": "chat"})`);
    }
    return agents;
  }

  #common(name: string, agent: ChatShape | GraphShape, at: JsonPath) {
    return {
      name,
      description: agent.description ?? "",
      model: this.#nonEmpty(agent.model, [...at, "model"]) ?? this.defaults.model,
      think: agent.think ?? this.defaults.think,
      recursionLimit: agent.recursionLimit ?? this.defaults.recursionLimit,
      origin: `${this.#label}: ${formatPath(at)}`,
    };
  }

  #chat(name: string, agent: ChatShape, at: JsonPath): ChatAgentDefinition {
    if (agent.systemPrompt !== undefined && agent.systemPromptFile !== undefined) {
      this.fail([...at, "systemPromptFile"], `an agent has "systemPrompt" or "systemPromptFile", not both`);
    }
    let systemPrompt = agent.systemPrompt ?? this.defaults.systemPrompt;
    if (agent.systemPromptFile !== undefined) {
      const promptPath = this.#path(agent.systemPromptFile, [...at, "systemPromptFile"]);
      try {
        systemPrompt = readFileSync(promptPath, "utf8");
      } catch (error) {
        this.fail([...at, "systemPromptFile"], `${agent.systemPromptFile} cannot be read: ${ioReason(error)}`);
      }
    }

    const tools = agent.tools ?? [...BUILTIN_TOOL_NAMES];
    this.#unique(tools, [...at, "tools"]);
    tools.forEach((tool, i) => {
      if (!BUILTIN_TOOL_NAMES.includes(tool)) {
        this.fail([...at, "tools", i], `"${tool}" is not a built-in tool (built-in tools: ${BUILTIN_TOOL_NAMES.join(", ")}; MCP tools come from "mcpServers")`);
      }
    });

    // Which server's allow-list already names a tool, for clash checks within this agent.
    const allowedFrom = new Map<string, string>();
    const mcpServers: McpServerDefinition[] = [];
    for (const [serverName, server] of Object.entries(agent.mcpServers ?? {})) {
      const serverAt = [...at, "mcpServers", serverName];
      if (!NAME.test(serverName)) this.fail(serverAt, `server names use ${NAME_RULE}`, { key: true });
      const definition = this.#server(serverName, server, serverAt);
      definition.tools?.forEach((tool, i) => {
        const toolAt = [...serverAt, "tools", i];
        if (tools.includes(tool)) this.fail(toolAt, `"${tool}" is also a built-in tool of this agent; tool names must be unique within an agent`);
        const other = allowedFrom.get(tool);
        if (other !== undefined) this.fail(toolAt, `"${tool}" is also allowed from server "${other}"; tool names must be unique within an agent`);
        allowedFrom.set(tool, serverName);
      });
      mcpServers.push(definition);
    }

    const requireApproval = agent.requireApproval ?? [];
    this.#unique(requireApproval, [...at, "requireApproval"]);
    requireApproval.forEach((tool, i) => {
      if (tools.includes(tool) || allowedFrom.has(tool)) return;
      const known = [...tools, ...allowedFrom.keys()];
      this.fail(
        [...at, "requireApproval", i],
        `"${tool}" is not a tool of this agent (${known.length ? `its known tools: ${known.join(", ")}` : "it has no known tools"}); an MCP tool is known here only when its server's "tools" allow-list names it`,
      );
    });

    return { ...this.#common(name, agent, at), type: "chat", systemPrompt, tools, mcpServers, requireApproval };
  }

  #graph(name: string, agent: GraphShape, at: JsonPath): GraphAgentDefinition {
    const modulePath = this.#path(agent.module, [...at, "module"]);
    let isFile = false;
    try {
      isFile = statSync(modulePath).isFile();
    } catch (error) {
      this.fail([...at, "module"], `${agent.module} does not exist (${ioReason(error)})`);
    }
    if (!isFile) this.fail([...at, "module"], `${agent.module} is not a file`);
    const exportName = this.#nonEmpty(agent.export, [...at, "export"]) ?? "default";
    return { ...this.#common(name, agent, at), type: "graph", module: modulePath, moduleLabel: agent.module, export: exportName };
  }

  #server(name: string, server: ServerShape, at: JsonPath): McpServerDefinition {
    const common = {
      name,
      tools: server.tools,
      timeoutMs: server.timeoutMs ?? DEFAULT_MCP_TIMEOUT_MS,
      origin: `${this.#label}: ${formatPath(at)}`,
    };
    if (server.tools !== undefined) {
      if (server.tools.length === 0) this.fail([...at, "tools"], `an empty allow-list lets no tool through; list tool names, or leave "tools" out for all of them`);
      this.#unique(server.tools, [...at, "tools"]);
      server.tools.forEach((tool, i) => this.#nonEmpty(tool, [...at, "tools", i]));
    }
    const stdioKeys = (["command", "args", "env", "cwd"] as const).filter((k) => server[k] !== undefined);
    const httpKeys = (["url", "headers"] as const).filter((k) => server[k] !== undefined);
    if (server.command !== undefined && server.url !== undefined) {
      this.fail([...at, "url"], `a server has "command" (stdio) or "url" (streamable HTTP), not both`);
    }
    if (server.url !== undefined) {
      if (stdioKeys.length > 0) this.fail([...at, stdioKeys[0]!], `"${stdioKeys[0]}" is for stdio servers; this one has "url"`);
      let url: URL | undefined;
      try {
        url = new URL(server.url);
      } catch {
        url = undefined;
      }
      if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
        this.fail([...at, "url"], `expected an http or https URL such as https://mcp.example.com/mcp, got "${server.url}"`);
      }
      const headers: Record<string, string> = {};
      for (const [header, value] of Object.entries(server.headers ?? {})) {
        if (!HEADER_NAME.test(header)) this.fail([...at, "headers", header], `"${header}" is not a valid HTTP header name`, { key: true });
        headers[header] = this.#substitute(value, [...at, "headers", header]);
      }
      return { ...common, transport: "http", url: server.url, headers };
    }
    if (server.command === undefined) this.fail(at, `a server needs "command" (stdio) or "url" (streamable HTTP)`);
    if (httpKeys.length > 0) this.fail([...at, httpKeys[0]!], `"${httpKeys[0]}" is for HTTP servers; this one has no "url"`);
    const command = this.#nonEmpty(server.command, [...at, "command"])!;
    const env: Record<string, string> = {};
    for (const [variable, value] of Object.entries(server.env ?? {})) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(variable)) this.fail([...at, "env", variable], `"${variable}" is not a valid environment variable name`, { key: true });
      env[variable] = this.#substitute(value, [...at, "env", variable]);
    }
    const cwd = server.cwd === undefined ? this.#folder : this.#path(server.cwd, [...at, "cwd"]);
    let isDirectory = false;
    try {
      isDirectory = statSync(cwd).isDirectory();
    } catch (error) {
      this.fail([...at, "cwd"], `${server.cwd} does not exist (${ioReason(error)})`);
    }
    if (!isDirectory) this.fail([...at, "cwd"], `${server.cwd} is not a folder`);
    // A bare name is looked up on PATH by the OS; anything with a slash is a path from the config file's folder.
    const resolvedCommand = command.includes("/") ? path.resolve(this.#folder, command) : command;
    return { ...common, transport: "stdio", command: resolvedCommand, args: server.args ?? [], env, cwd };
  }

  /** A path from the file, resolved against the file's folder. */
  #path(value: string, at: JsonPath): string {
    this.#nonEmpty(value, at);
    return path.resolve(this.#folder, value);
  }

  #nonEmpty(value: string | undefined, at: JsonPath): string | undefined {
    if (value !== undefined && value.trim() === "") this.fail(at, "must not be empty");
    return value;
  }

  #unique(values: string[], at: JsonPath): void {
    values.forEach((value, i) => {
      if (values.indexOf(value) !== i) this.fail([...at, i], `"${value}" is listed twice`);
    });
  }

  /** `${NAME}` → the environment variable NAME. */
  #substitute(value: string, at: JsonPath): string {
    return value.replace(/\$\{([^}]*)\}/g, (_match, variable: string) => {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(variable)) this.fail(at, `"\${${variable}}" is not a valid environment variable reference`);
      const found = this.env[variable];
      if (found === undefined) this.fail(at, `refers to the environment variable ${variable}, which is not set`);
      return found!;
    });
  }

  /** Throws the one-line ConfigError for a problem at `at`, with the line (and column) where the file has it. */
  fail(at: JsonPath, problem: string, options: { key?: boolean; more?: string } = {}): never {
    const location = this.#locate(at);
    // For a bad key the position known is its value's, a few characters on; the line is what helps.
    const where = location ? (options.key ? ` (line ${location.line})` : ` (line ${location.line}, column ${location.column})`) : "";
    throw new ConfigError(`${this.#label}: ${at.length ? formatPath(at) : "the file"}: ${problem}${where}${options.more ?? ""}`);
  }

  /** Reports zod's first issue in our words; the count of the others says there is more to fix. */
  #failZod(issues: z.core.$ZodIssue[], raw: unknown): never {
    const first = issues[0]!;
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more problem${issues.length > 2 ? "s" : ""})` : "";
    const at = [...first.path] as (string | number)[];
    if (first.code === "unrecognized_keys") {
      const key = first.keys[0]!;
      const known = KNOWN_KEYS[objectKind(at, raw)] ?? [];
      const suggestion = closest(key, known);
      this.fail([...at, key], `unknown key${suggestion ? ` (did you mean "${suggestion}"?)` : ""}; known keys: ${known.join(", ")}`, { key: true, more });
    }
    const value = valueAt(raw, at);
    this.fail(at, zodProblem(first, value), { more });
  }
}

function zodProblem(issue: z.core.$ZodIssue, value: unknown): string {
  switch (issue.code) {
    case "invalid_union": {
      const options = (issue as { options?: unknown[] }).options ?? ["chat", "graph"];
      return `expected ${options.map((o) => JSON.stringify(o)).join(" or ")}, ${value === undefined ? "but it is missing" : `got ${describe(value)}`}`;
    }
    case "invalid_type":
      return value === undefined ? "is required" : `expected ${article(issue.expected)}, got ${describe(value)}`;
    case "invalid_value":
      return `expected ${issue.values.map((v) => JSON.stringify(v)).join(" or ")}, got ${describe(value)}`;
    case "too_small":
      return `must be at least ${String(issue.minimum)}, got ${describe(value)}`;
    case "too_big":
      return `must be at most ${String(issue.maximum)}, got ${describe(value)}`;
    default:
      return issue.message;
  }
}

/** agents.support.mcpServers.files.command, agents.support.tools[1], agents["my agent"]. */
export function formatPath(at: JsonPath): string {
  let out = "";
  for (const part of at) {
    if (typeof part === "number") out += `[${part}]`;
    else if (/^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(part)) out += out === "" ? part : `.${part}`;
    else out += `[${JSON.stringify(part)}]`;
  }
  return out;
}

function valueAt(root: unknown, at: readonly (string | number)[]): unknown {
  let value = root;
  for (const part of at) {
    if (value === null || typeof value !== "object" || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string | number, unknown>)[part];
  }
  return value;
}

/** Which object an unknown key sits in, to list its known keys. */
function objectKind(at: readonly (string | number)[], raw: unknown): string {
  if (at.length === 0) return "file";
  if (at.length === 4 && at[2] === "mcpServers") return "server";
  if (at.length === 2) {
    const type = (valueAt(raw, at) as { type?: unknown } | undefined)?.type;
    return type === "graph" ? "graph" : "chat";
  }
  return "";
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value)}`;
  if (typeof value === "number") return `${Number.isInteger(value) ? "the number" : "the fraction"} ${value}`;
  return String(value);
}

function article(expected: string): string {
  const names: Record<string, string> = {
    string: "a string",
    number: "a number",
    int: "a whole number",
    boolean: "true or false",
    object: "an object",
    record: "an object",
    array: "an array",
  };
  return names[expected] ?? expected;
}

function ioReason(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return "no such file or folder";
  if (code === "EACCES") return "permission denied";
  if (code === "EISDIR") return "it is a folder";
  return (error as Error).message.split("\n")[0] ?? String(error);
}

/** The known key nearest to a misspelt one, when it is near enough to be a typo. */
function closest(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const d = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best !== undefined && bestDistance <= Math.max(1, Math.floor(best.length / 3)) ? best : undefined;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}
