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
//       "concurrency": 2,                     runs of this agent executing at once; default: its model's MODEL_CONCURRENCY
//       "retention": {"conversationDays": 30},   its conversations idle this long are deleted; default RETENTION_CONVERSATION_DAYS
//       "webhook": {"url": "https://...", "events": ["RUN_ENDED"]},   every run's end (and wait) POSTed there too; needs WEBHOOK_SECRET
//       "tools": ["calculator"],              built-in tools; default all of them, [] for none
//       "mcpServers": {"SERVER": {            letters, digits, _ and -, starting with a letter
//         "command": "node", "args": [], "env": {}, "cwd": ".",    a stdio server, or
//         "url": "https://...", "headers": {},                      a streamable HTTP server;
//         "userHeaders": {"X-User-Id": "id"}, "forwardToken": true,  HTTP only, opt-in: the caller's identity per call
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
//              const graphs = await loadAgentGraphs(agents);       // kinds/; ConfigError stops start-up too
//              const mcp = new McpSupervisor(agents, { logger }); // mcp/
//              await mcp.start();                                 // never throws; bounded by its start timeout
//   run        graphs.get(agent.name).compile(checkpointer), once; each run passes its model in
//              configurable.model and the kind's tools (kindOf(agent).tools) in configurable.tools.
//   API        agents: name, description, type, model, their kind's tools and requireApproval;
//              mcp.status(agent.name) tells which servers are up.
//   shutdown   await mcp.close() after runs are stopped: it ends every MCP server and its processes.
import { readFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { ConfigError } from "../config.ts";
import { DEFAULT_AGENT, type AgentDefaults } from "./definitions.ts";
import { JsonSyntaxError, parseJsonWithLocations, type JsonLocation, type JsonPath } from "./json-locations.ts";
import { ioReason, NAME, NAME_RULE, type DefinitionReader } from "./kinds/definition-reader.ts";
import { builtinDefaultAgent } from "./kinds/chat.ts";
import { KINDS, kindOf, type AgentDefinition } from "./kinds/index.ts";
import { formatPath, unknownKeyProblem, zodProblem } from "./agent-file-wording.ts";

export interface LoadAgentDefinitionsOptions {
  /** What relative RUNLEDGER_CONFIG paths resolve against; default process.cwd(). */
  cwd?: string;
  /** Where `${NAME}` references are looked up; default process.env. */
  env?: Record<string, string | undefined>;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const fileSchema = z.strictObject({
  agents: z.record(z.string(), z.discriminatedUnion("type", KINDS.map((kind) => kind.schema) as unknown as [z.ZodObject, ...z.ZodObject[]])),
});

type CommonShape = {
  type: string;
  description?: string;
  model?: string;
  think?: boolean;
  recursionLimit?: number;
  concurrency?: number;
  retention?: { conversationDays: number };
  webhook?: { url: string; events?: ("RUN_ENDED" | "RUN_WAITING")[] };
};

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
class FileReader implements DefinitionReader {
  readonly #label: string;
  readonly folder: string;
  #locate: (p: JsonPath) => JsonLocation | undefined = () => undefined;

  constructor(
    file: string,
    private readonly absolute: string,
    readonly defaults: AgentDefaults,
    private readonly env: Record<string, string | undefined>,
  ) {
    this.#label = `RUNLEDGER_CONFIG ${file}`;
    this.folder = path.dirname(absolute);
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
    const shape = (result as unknown as { data: { agents: Record<string, CommonShape> } }).data;

    const agents: AgentDefinition[] = [];
    for (const [name, entry] of Object.entries(shape.agents)) {
      const at = ["agents", name];
      if (!NAME.test(name)) this.fail(at, `agent names use ${NAME_RULE}`, { key: true });
      const common = {
        name,
        description: entry.description ?? "",
        model: this.nonEmpty(entry.model, [...at, "model"]) ?? this.defaults.model,
        think: entry.think ?? this.defaults.think,
        recursionLimit: entry.recursionLimit ?? this.defaults.recursionLimit,
        ...(entry.concurrency !== undefined ? { concurrency: entry.concurrency } : {}),
        ...(entry.retention !== undefined ? { retention: entry.retention } : {}),
        ...(entry.webhook !== undefined ? { webhook: entry.webhook } : {}),
        origin: this.origin(at),
      };
      const kind = kindOf({ ...common, type: entry.type });
      agents.push({ ...common, type: kind.type, ...kind.read(entry as never, at, this) } as AgentDefinition);
    }
    if (!agents.some((a) => a.name === DEFAULT_AGENT)) {
      this.fail(
        ["agents"],
        `no agent named "${DEFAULT_AGENT}": startRun without an agent runs it, so declare it (today's agent is "${DEFAULT_AGENT}": {"type": "chat"})`,
      );
    }
    return agents;
  }

  origin(at: JsonPath): string {
    return `${this.#label}: ${formatPath(at)}`;
  }

  path(value: string, at: JsonPath): string {
    this.nonEmpty(value, at);
    return path.resolve(this.folder, value);
  }

  nonEmpty(value: string | undefined, at: JsonPath): string | undefined {
    if (value !== undefined && value.trim() === "") this.fail(at, "must not be empty");
    return value;
  }

  unique(values: readonly string[], at: JsonPath): void {
    values.forEach((value, i) => {
      if (values.indexOf(value) !== i) this.fail([...at, i], `"${value}" is listed twice`);
    });
  }

  substitute(value: string, at: JsonPath): string {
    return value.replace(/\$\{([^}]*)\}/g, (_match, variable: string) => {
      if (!ENV_NAME.test(variable)) this.fail(at, `"\${${variable}}" is not a valid environment variable reference`);
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
      this.fail([...at, key], unknownKeyProblem(key, fileSchema, at, raw), { key: true, more });
    }
    this.fail(
      at,
      zodProblem(
        first,
        raw,
        KINDS.map((kind) => kind.type),
      ),
      { more },
    );
  }
}
