// One MCP server of one agent: connects (starting the process for stdio), lists
// its tools, restarts it with backoff when it dies, and makes each tool call on
// whichever connection is current. The LangChain tools built over it (through
// @langchain/mcp-adapters) outlive restarts: they call through this object,
// never through one SDK client.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { ErrorCode, McpError, type CallToolRequest, type ListToolsRequest, type ReadResourceRequest } from "@modelcontextprotocol/sdk/types.js";
import { loadMcpTools } from "@langchain/mcp-adapters";
import type { DynamicStructuredTool } from "@langchain/core/tools";
import packageJson from "../../../package.json" with { type: "json" };
import type { McpServerDefinition } from "../kinds/mcp-servers.ts";
import { ProcessGroupStdioTransport } from "./stdio-transport.ts";

/** The log calls the MCP layer makes; the app's logger fits. */
export interface McpLogger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export const silentLogger: McpLogger = { debug() {}, info() {}, warn() {}, error() {} };

/**
 * - starting: a connection attempt is in progress (tool calls wait for it)
 * - ready: connected and its tools listed
 * - down: the last attempt failed or the server died; a retry is scheduled (calls fail at once)
 * - stopped: closed for good (shutdown)
 */
export type McpServerState = "starting" | "ready" | "down" | "stopped";

export interface McpServerStatus {
  agent: string;
  server: string;
  transport: "stdio" | "http";
  state: McpServerState;
  /** The stdio server's process id while it runs. */
  pid: number | undefined;
  /** The tools the agent gets from it (allow-list applied), from the last successful listing. */
  toolNames: string[];
  /** Why it is down, or why it last went down. */
  lastError: string | undefined;
  /** Connection attempts after the first one. */
  restarts: number;
  /** When a down server is tried again. */
  retryAt: Date | undefined;
}

export interface McpTimings {
  /** Longest wait for a server to start, answer `initialize` and list its tools; default 30000 ms. */
  startTimeoutMs: number;
  /** Wait before the first retry; doubles on each failure in a row; default 500 ms. */
  initialBackoffMs: number;
  /** The longest wait between retries; default 30000 ms. */
  maxBackoffMs: number;
  /** A server that stayed up this long starts over at initialBackoffMs when it next dies; default 60000 ms. */
  stableAfterMs: number;
  /** Each stopping step of a stdio server (end of stdin, then SIGTERM) waits this long; default 2000 ms. */
  stopGraceMs: number;
  /** After a transport error, how long an HTTP server has to answer a ping before it counts as down; default 5000 ms. */
  healthCheckTimeoutMs: number;
}

export const DEFAULT_MCP_TIMINGS: McpTimings = {
  startTimeoutMs: 30_000,
  initialBackoffMs: 500,
  maxBackoffMs: 30_000,
  stableAfterMs: 60_000,
  stopGraceMs: 2_000,
  healthCheckTimeoutMs: 5_000,
};

/**
 * A tool call that failed for a reason the model should read. Named
 * "ToolException" because @langchain/mcp-adapters passes errors of that name
 * through unchanged instead of prefixing "Error calling tool ...: Error: ".
 */
export class McpToolError extends Error {
  override name = "ToolException";
}

const STDERR_TAIL_LINES = 20;

export class McpServerConnection {
  readonly #agent: string;
  readonly #definition: McpServerDefinition;
  readonly #log: McpLogger;
  readonly #timings: McpTimings;
  readonly #onChange: () => void;

  #state: McpServerState = "down";
  #client: Client | undefined;
  #transport: ProcessGroupStdioTransport | StreamableHTTPClientTransport | undefined;
  /** The current attempt, for calls that arrive while it runs. */
  #attempt: Promise<void> | undefined;
  #tools: DynamicStructuredTool[] = [];
  #lastError: string | undefined;
  /** Set when the connection is being given up on purpose (an HTTP server that stopped answering), to say why. */
  #lossReason: string | undefined;
  #failures = 0;
  #restarts = 0;
  #started = false;
  #readyAt = 0;
  #retryTimer: NodeJS.Timeout | undefined;
  #retryAt: Date | undefined;
  #checkingHealth = false;
  #stopping: Promise<void>[] = [];
  readonly #stderrTail: string[] = [];

  constructor(agent: string, definition: McpServerDefinition, options: { logger: McpLogger; timings: McpTimings; onChange: () => void }) {
    this.#agent = agent;
    this.#definition = definition;
    this.#log = options.logger;
    this.#timings = options.timings;
    this.#onChange = options.onChange;
  }

  get name(): string {
    return this.#definition.name;
  }

  /** The agent's LangChain tools from this server, from the last successful listing (kept while it is down). */
  get tools(): readonly DynamicStructuredTool[] {
    return this.#tools;
  }

  status(): McpServerStatus {
    return {
      agent: this.#agent,
      server: this.#definition.name,
      transport: this.#definition.transport,
      state: this.#state,
      pid: this.#state === "ready" && this.#transport instanceof ProcessGroupStdioTransport ? this.#transport.pid : undefined,
      toolNames: this.#tools.map((t) => t.name),
      lastError: this.#lastError,
      restarts: this.#restarts,
      retryAt: this.#retryAt,
    };
  }

  /** The first connection attempt; resolves when it has succeeded or failed (a failure schedules retries). */
  start(): Promise<void> {
    if (this.#started) return this.#attempt ?? Promise.resolve();
    this.#started = true;
    return this.#connect();
  }

  /** Calls a tool on the current connection; every failure is an Error the model can read. */
  async callTool(params: CallToolRequest["params"], options: RequestOptions = {}) {
    const client = await this.#readyClient(options.signal);
    const outer = options.signal;
    // One controller per call: the SDK never removes the abort listener it adds,
    // and a run's signal lives through many calls.
    const controller = new AbortController();
    const forward = () => controller.abort(outer?.reason);
    if (outer?.aborted) forward();
    outer?.addEventListener("abort", forward, { once: true });
    const timeout = options.timeout ?? this.#definition.timeoutMs;
    try {
      return await client.callTool(params, undefined, {
        ...options,
        signal: controller.signal,
        timeout,
        // A server reporting progress is working: its timeout starts again with each report.
        resetTimeoutOnProgress: true,
        onprogress: options.onprogress ?? (() => {}),
      });
    } catch (error) {
      if (outer?.aborted) throw abortError(outer);
      throw this.#callError(error, params.name, timeout);
    } finally {
      outer?.removeEventListener("abort", forward);
    }
  }

  /** For resource links in tool results (mcp-adapters reads them through the client). */
  async readResource(params: ReadResourceRequest["params"], options: RequestOptions = {}) {
    const client = await this.#readyClient(options.signal);
    const timeout = options.timeout ?? this.#definition.timeoutMs;
    try {
      return await client.readResource(params, { ...options, timeout });
    } catch (error) {
      throw this.#callError(error, `resource ${params.uri}`, timeout);
    }
  }

  /** Stops for good: cancels any retry, closes the connection and stops the process group. */
  async close(): Promise<void> {
    if (this.#state === "stopped") {
      await Promise.all(this.#stopping);
      return;
    }
    this.#setState("stopped");
    clearTimeout(this.#retryTimer);
    this.#retryAt = undefined;
    const client = this.#client;
    const transport = this.#transport;
    this.#client = undefined;
    this.#transport = undefined;
    if (client && transport) this.#stopping.push(this.#shutDown(client, transport, { terminateSession: true }));
    await Promise.all(this.#stopping);
  }

  async #readyClient(signal: AbortSignal | undefined): Promise<Client> {
    signal?.throwIfAborted();
    if (this.#state === "starting" && this.#attempt) {
      // Restarting right now (a second or so for most servers): worth waiting for rather than failing the call.
      await raceAbort(this.#attempt, signal);
    }
    const client = this.#client;
    if (this.#state === "ready" && client) return client;
    throw new McpToolError(this.#unavailable());
  }

  #unavailable(): string {
    const what = `MCP server "${this.#definition.name}" is not available`;
    if (this.#state === "stopped") return `${what}: runledger is shutting down`;
    const retry = this.#retryAt ? `; runledger tries it again in ${Math.max(0, Math.ceil((this.#retryAt.getTime() - Date.now()) / 1000))} s` : "";
    return `${what}: ${this.#lastError ?? "it has not started yet"}${retry}`;
  }

  #callError(error: unknown, what: string, timeoutMs: number): McpToolError {
    const server = `MCP server "${this.#definition.name}"`;
    const next = this.#definition.transport === "stdio" ? "runledger restarts it" : "runledger reconnects once it answers again";
    if (error instanceof McpError && error.code === ErrorCode.ConnectionClosed) {
      return new McpToolError(`${server} went away during the call to ${what} (${this.#lastError ?? "connection closed"}); ${next}`);
    }
    if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
      return new McpToolError(`${server} did not finish ${what} within ${timeoutMs} ms without reporting progress, so the call was cancelled`);
    }
    // An error the server answered with (unknown tool, invalid arguments, its own failure).
    if (error instanceof McpError) return new McpToolError(`${server} refused the call to ${what}: ${error.message}`);
    // Anything else failed on the way: a POST that found no server, a stream cut mid-answer.
    return new McpToolError(`${server} went away during the call to ${what} (${errorText(error)}); ${next}`);
  }

  #connect(): Promise<void> {
    const attempt = this.#connectOnce().finally(() => {
      if (this.#attempt === attempt) this.#attempt = undefined;
    });
    this.#attempt = attempt;
    return attempt;
  }

  async #connectOnce(): Promise<void> {
    // Whatever is left of the previous process (a crashed server's children) goes first.
    await Promise.all(this.#stopping);
    this.#stopping = [];
    if (this.#state === "stopped") return;
    this.#retryAt = undefined;
    this.#lossReason = undefined;
    this.#setState("starting");

    const client = new Client(
      { name: "runledger", version: packageJson.version },
      { capabilities: {}, listChanged: { tools: { autoRefresh: false, onChanged: () => void this.#relist(client) } } },
    );
    const transport = this.#createTransport();
    this.#client = client;
    this.#transport = transport;
    client.onclose = () => this.#lost(client);
    client.onerror = (error) => this.#transportError(client, error);

    const started = Date.now();
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`it did not start and list its tools within ${this.#timings.startTimeoutMs} ms`)), this.#timings.startTimeoutMs);
      });
      await Promise.race([client.connect(transport, { timeout: this.#timings.startTimeoutMs }), timeout]);
      const tools = await Promise.race([this.#list(client), timeout]);
      if (this.#client !== client) return; // closed while it started
      this.#tools = tools;
      this.#readyAt = Date.now();
      this.#lastError = undefined;
      this.#setState("ready");
      this.#log.info("MCP server ready", { ...this.#fields(), tools: tools.map((t) => t.name), ms: this.#readyAt - started });
    } catch (error) {
      if (this.#client !== client) return;
      this.#lastError = this.#describeFailure(error, transport);
      this.#client = undefined;
      this.#transport = undefined;
      this.#stopping.push(this.#shutDown(client, transport, { terminateSession: false }));
      this.#scheduleRetry("MCP server failed to start");
    } finally {
      clearTimeout(timer);
    }
  }

  #createTransport(): ProcessGroupStdioTransport | StreamableHTTPClientTransport {
    const definition = this.#definition;
    this.#stderrTail.length = 0;
    if (definition.transport === "http") {
      return new StreamableHTTPClientTransport(new URL(definition.url), { requestInit: { headers: definition.headers } });
    }
    let warnedStdout = false;
    return new ProcessGroupStdioTransport({
      command: definition.command,
      args: definition.args,
      env: definition.env,
      cwd: definition.cwd,
      stopGraceMs: this.#timings.stopGraceMs,
      onStderrLine: (line) => {
        this.#stderrTail.push(line);
        if (this.#stderrTail.length > STDERR_TAIL_LINES) this.#stderrTail.shift();
        this.#log.debug("MCP server stderr", { ...this.#fields(), line });
      },
      onStdoutNoise: (error) => {
        // Once per process: a server that logs to stdout does it on every call.
        if (warnedStdout) return;
        warnedStdout = true;
        this.#log.warn("MCP server wrote something other than JSON-RPC to stdout (stdout is for MCP messages only; logs belong on stderr); such lines are skipped", { ...this.#fields(), error: errorText(error) });
      },
    });
  }

  /** The server's tools through mcp-adapters, the allow-list applied. */
  async #list(client: Client): Promise<DynamicStructuredTool[]> {
    let offered: string[] = [];
    // mcp-adapters needs something shaped like an SDK client: listing goes to the client being
    // connected, calls to whichever connection is current when they happen.
    const facade = {
      listTools: async (params?: ListToolsRequest["params"], options?: RequestOptions) => {
        const result = await client.listTools(params, { timeout: this.#timings.startTimeoutMs, ...options });
        offered = [...offered, ...result.tools.map((t) => t.name)];
        return result;
      },
      callTool: (params: CallToolRequest["params"], _schema: unknown, options?: RequestOptions) => this.callTool(params, options),
      readResource: (params: ReadResourceRequest["params"], options?: RequestOptions) => this.readResource(params, options),
    };
    const loaded = await loadMcpTools(this.#definition.name, facade as unknown as Client, { throwOnLoadError: false });
    for (const tool of loaded) stopOnAbort(tool);
    const unusable = offered.filter((name) => !loaded.some((t) => t.name === name));
    if (unusable.length) this.#log.warn("MCP server offers tools whose input schema could not be used; they are left out", { ...this.#fields(), tools: unusable });
    const allow = this.#definition.tools;
    if (!allow) return loaded;
    const missing = allow.filter((name) => !offered.includes(name));
    if (missing.length) this.#log.warn("MCP server does not offer tools its allow-list names", { ...this.#fields(), tools: missing, offered });
    return loaded.filter((t) => allow.includes(t.name));
  }

  /** The server said its tool list changed. */
  async #relist(client: Client): Promise<void> {
    if (this.#client !== client || this.#state !== "ready") return;
    try {
      const tools = await this.#list(client);
      if (this.#client !== client) return;
      this.#tools = tools;
      this.#log.info("MCP server changed its tools", { ...this.#fields(), tools: tools.map((t) => t.name) });
      this.#onChange();
    } catch (error) {
      this.#log.warn("MCP server changed its tools but could not list them; keeping the previous list", { ...this.#fields(), error: errorText(error) });
    }
  }

  /** The connection closed: a stdio server's process ended, or an HTTP connection was given up. */
  #lost(client: Client): void {
    if (this.#client !== client || this.#state !== "ready") return; // a failed start or a shutdown: handled there
    const transport = this.#transport!;
    this.#lastError = this.#lossReason ?? (transport instanceof ProcessGroupStdioTransport ? exitText(transport.exit) : "the connection closed");
    this.#client = undefined;
    this.#transport = undefined;
    // Its children may still run (the group leader is what ended).
    this.#stopping.push(this.#shutDown(client, transport, { terminateSession: false }));
    if (Date.now() - this.#readyAt >= this.#timings.stableAfterMs) this.#failures = 0;
    this.#scheduleRetry("MCP server went down");
  }

  /**
   * The transport reported an error. For HTTP this is how a dead server shows
   * (a failed POST, a broken stream), and the SDK leaves the call waiting for its
   * timeout; a ping decides whether the server is still there.
   */
  #transportError(client: Client, error: Error): void {
    if (this.#client !== client || this.#state !== "ready") return;
    this.#log.debug("MCP transport error", { ...this.#fields(), error: errorText(error) });
    if (this.#definition.transport !== "http" || this.#checkingHealth) return;
    this.#checkingHealth = true;
    client
      .ping({ timeout: this.#timings.healthCheckTimeoutMs })
      .then(
        () => undefined,
        (pingError: unknown) => {
          if (this.#client !== client || this.#state !== "ready") return;
          this.#lossReason = `it stopped answering (${errorText(error)}; then ${errorText(pingError)})`;
          // Closing rejects the calls in flight at once and reports the loss through onclose.
          void client.close();
        },
      )
      .finally(() => {
        this.#checkingHealth = false;
      });
  }

  #scheduleRetry(message: string): void {
    const delay = Math.min(this.#timings.maxBackoffMs, this.#timings.initialBackoffMs * 2 ** this.#failures);
    this.#failures += 1;
    this.#retryAt = new Date(Date.now() + delay);
    this.#setState("down");
    this.#log.warn(message, { ...this.#fields(), error: this.#lastError, retryInMs: delay, ...(this.#stderrTail.length ? { stderr: this.#stderrTail.join("\n") } : {}) });
    this.#retryTimer = setTimeout(() => {
      this.#restarts += 1;
      void this.#connect();
    }, delay);
    // Never what keeps the process alive: shutdown closes the supervisor anyway.
    this.#retryTimer.unref();
  }

  async #shutDown(client: Client, transport: ProcessGroupStdioTransport | StreamableHTTPClientTransport, options: { terminateSession: boolean }): Promise<void> {
    client.onclose = undefined;
    client.onerror = undefined;
    if (options.terminateSession && transport instanceof StreamableHTTPClientTransport) {
      // Tell the server the session is over (a DELETE); a server that is gone or slow must not hold shutdown up.
      await Promise.race([transport.terminateSession().catch(() => {}), new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
    }
    // Client.close closes the transport: for stdio that stops the whole process group.
    await client.close().catch((error: unknown) => this.#log.debug("MCP close failed", { ...this.#fields(), error: errorText(error) }));
    if (transport instanceof ProcessGroupStdioTransport) await transport.close();
  }

  #describeFailure(error: unknown, transport: ProcessGroupStdioTransport | StreamableHTTPClientTransport): string {
    if (transport instanceof ProcessGroupStdioTransport && transport.exit) return `${exitText(transport.exit)} before it was ready`;
    return errorText(error);
  }

  #setState(state: McpServerState): void {
    this.#state = state;
    this.#onChange();
  }

  #fields(): Record<string, unknown> {
    const d = this.#definition;
    return { agent: this.#agent, server: d.name, ...(d.transport === "http" ? { url: d.url } : { command: d.command }) };
  }
}

function exitText(exit: { code: number | null; signal: NodeJS.Signals | null } | undefined): string {
  if (!exit) return "the process ended";
  return exit.signal ? `the process was killed by ${exit.signal}` : `the process exited with code ${exit.code}`;
}

function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  const detail = cause && typeof cause.code === "string" ? ` (${cause.code})` : "";
  return `${error.message.split("\n")[0]}${detail}`;
}

/**
 * Makes an mcp-adapters tool reject with the run's own abort reason the moment
 * the signal fires. DynamicStructuredTool does not watch the signal itself, and
 * mcp-adapters would wrap the reason as "Error calling tool x: Error: <reason>";
 * the run's cancel must surface as the cancel it is.
 */
function stopOnAbort(tool: DynamicStructuredTool): void {
  const call = tool.func;
  tool.func = ((input, runManager, config) => raceAbort(Promise.resolve(call(input, runManager, config)), config?.signal)) as typeof tool.func;
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    // Handled either way, so the loser of the race is never an unhandled rejection.
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** The abort reason as an Error, as LangChain reports it. */
function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  return new Error(typeof reason === "string" ? reason : "Aborted");
}
