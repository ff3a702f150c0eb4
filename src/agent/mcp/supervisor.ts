// The MCP servers of every agent, for the life of the runledger process.
//
// Start-up: start() begins every server at once and resolves when each has
// either come up or failed its first attempt (bounded by startTimeoutMs); it
// never rejects. A broken server is logged and retried with backoff, and start-up
// goes on: an MCP server is an outside dependency, like Ollama, and one that is
// down should cost the agents that use it those tools, not the API (reading
// conversations, recovering interrupted runs, other agents). Starting eagerly
// rather than at an agent's first run means the log shows a broken server at
// start-up, and the first run does not wait for a process to start.
//
// Each agent has its own instance of each server it declares (one process per
// agent and stdio server): agents' servers differ in env and allow-lists, and
// one agent's crash or slow call never touches another's. Concurrent runs of
// one agent share that agent's servers.
//
// Tools: toolsFor(agent) is what the agent has now. A server's tools are known
// once it has been listed; they stay while it restarts, and a call in that time
// fails with a message saying so (the model reads it as a tool error). A server
// that has never come up contributes no tools. A failed call is never retried
// (a tool may have side effects); the model reads the error and decides. A call
// made while the server is restarting waits for the restart. A run's abort
// signal (config.signal) stops a call at once and sends the server MCP's
// notifications/cancelled. Tool names are the servers' own;
// a name another tool of the agent already has (a built-in, or a tool of a
// server declared earlier) is left out and logged as an error, since the file's
// allow-lists could not rule it out (see agent-file.ts).
//
// Shutdown: close() stops every server (stdio: the whole process group, see
// stdio-transport.ts; HTTP: the session is ended with a DELETE) and cancels retries.
import type { DynamicStructuredTool } from "@langchain/core/tools";
import { kindOf, type AgentDefinition } from "../kinds/index.ts";
import type { McpToolSource, SourcedTool } from "../tool-info.ts";
import { McpServerConnection } from "./connection.ts";
import { DEFAULT_MCP_TIMINGS, silentLogger, type McpLogger, type McpServerStatus, type McpTimings } from "./types.ts";

export interface McpSupervisorOptions extends Partial<McpTimings> {
  /** Where server starts, failures, restarts and stderr (debug) are logged; default nowhere. */
  logger?: McpLogger;
}

interface AgentServers {
  builtins: readonly string[];
  connections: McpServerConnection[];
  tools: SourcedTool[];
  /** Clashes already logged, so a restart does not log them again. */
  clashes: Set<string>;
}

export class McpSupervisor implements McpToolSource {
  readonly #agents = new Map<string, AgentServers>();
  readonly #listeners = new Set<(status: McpServerStatus) => void>();
  readonly #log: McpLogger;
  #started: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  constructor(agents: readonly AgentDefinition[], options: McpSupervisorOptions = {}) {
    const { logger, ...timings } = options;
    this.#log = logger ?? silentLogger;
    const resolvedTimings: McpTimings = { ...DEFAULT_MCP_TIMINGS, ...definedOnly(timings) };
    for (const agent of agents) {
      const kind = kindOf(agent);
      const servers = kind.mcpServers(agent);
      if (servers.length === 0) continue;
      const entry: AgentServers = { builtins: kind.builtinToolNames(agent), connections: [], tools: [], clashes: new Set() };
      for (const server of servers) {
        const connection: McpServerConnection = new McpServerConnection(agent.name, server, {
          logger: this.#log,
          timings: resolvedTimings,
          onChange: () => {
            this.#rebuild(agent.name, entry);
            const status = connection.status();
            for (const listener of this.#listeners) listener(status);
          },
        });
        entry.connections.push(connection);
      }
      this.#agents.set(agent.name, entry);
    }
  }

  /** Starts every server; resolves once each has come up or failed its first attempt. Never rejects. */
  start(): Promise<void> {
    this.#started ??= Promise.all([...this.#agents.values()].flatMap((a) => a.connections.map((c) => c.start()))).then(() => {
      const down = this.status().filter((s) => s.state !== "ready");
      if (down.length)
        this.#log.warn("some MCP servers are not available; their agents run without their tools until they come up", {
          servers: down.map((s) => `${s.agent}/${s.server}`),
        });
    });
    return this.#started;
  }

  toolsFor(agent: string): SourcedTool[] {
    return this.#agents.get(agent)?.tools ?? [];
  }

  /** Every server's status, or one agent's. */
  status(agent?: string): McpServerStatus[] {
    const entries = agent === undefined ? [...this.#agents.values()] : [this.#agents.get(agent)].filter((e) => e !== undefined);
    return entries.flatMap((e) => e.connections.map((c) => c.status()));
  }

  /** Calls `listener` on every state or tool-list change of any server; returns the unsubscribe function. */
  onStatus(listener: (status: McpServerStatus) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Stops every server and every retry; idempotent. */
  close(): Promise<void> {
    this.#closing ??= Promise.all([...this.#agents.values()].flatMap((a) => a.connections.map((c) => c.close()))).then(() => undefined);
    return this.#closing;
  }

  #rebuild(agent: string, entry: AgentServers): void {
    const taken = new Map<string, string>(entry.builtins.map((name) => [name, "built-in"]));
    const tools: SourcedTool[] = [];
    for (const connection of entry.connections) {
      for (const tool of connection.tools as DynamicStructuredTool[]) {
        const owner = taken.get(tool.name);
        if (owner !== undefined) {
          const key = `${connection.name}/${tool.name}`;
          if (!entry.clashes.has(key)) {
            entry.clashes.add(key);
            this.#log.error(
              `MCP tool "${tool.name}" of server "${connection.name}" is left out: agent "${agent}" already has a tool of that name (${owner === "built-in" ? "built-in" : `from server "${owner}"`}); give one of the servers a "tools" allow-list without it`,
              { agent, server: connection.name, tool: tool.name },
            );
          }
          continue;
        }
        taken.set(tool.name, connection.name);
        tools.push({ tool, source: `mcp:${connection.name}` });
      }
    }
    entry.tools = tools;
  }
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
