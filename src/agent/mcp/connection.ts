// One MCP server of one agent: connects (starting the process for stdio), lists
// its tools, restarts it with backoff when it dies, and makes each tool call on
// whichever connection is current. The LangChain tools built over it
// (server-tools.ts) outlive restarts: they call through this object, never
// through one SDK client.
import { AsyncLocalStorage } from "node:async_hooks";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { CallToolRequest, ReadResourceRequest } from "@modelcontextprotocol/sdk/types.js";
import type { DynamicStructuredTool } from "@langchain/core/tools";
import packageJson from "../../../package.json" with { type: "json" };
import type { McpServerDefinition } from "../kinds/mcp-servers.ts";
import { abortError, raceAbort } from "./abort.ts";
import { callError, errorText, exitText, McpToolError } from "./errors.ts";
import { listServerTools } from "./server-tools.ts";
import { ProcessGroupStdioTransport } from "./stdio-transport.ts";
import { createTransport, type McpTransport } from "./transport.ts";
import type { McpLogger, McpServerState, McpServerStatus, McpTimings } from "./types.ts";

const STDERR_TAIL_LINES = 20;

export class McpServerConnection {
  readonly #agent: string;
  readonly #definition: McpServerDefinition;
  readonly #log: McpLogger;
  readonly #timings: McpTimings;
  readonly #onChange: () => void;

  #state: McpServerState = "down";
  #client: Client | undefined;
  #transport: McpTransport | undefined;
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
  /**
   * The async context the connection was made in (start-up's). What the SDK reports
   * runs in the context of whatever set it off, a caller's tool call often enough;
   * the health check, reconnects and relisting it leads to are the connection's own
   * and run here, so they never carry a caller's context (its identity, see
   * caller-identity.ts) nor keep it alive in a timer.
   */
  readonly #ownContext = AsyncLocalStorage.snapshot();

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
      throw callError(this.#definition, this.#lastError, error, params.name, timeout);
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
      throw callError(this.#definition, this.#lastError, error, `resource ${params.uri}`, timeout);
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
      { capabilities: {}, listChanged: { tools: { autoRefresh: false, onChanged: () => this.#ownContext(() => void this.#relist(client)) } } },
    );
    const transport = this.#createTransport();
    this.#client = client;
    this.#transport = transport;
    client.onclose = () => this.#ownContext(() => this.#lost(client));
    client.onerror = (error) => this.#ownContext(() => this.#transportError(client, error));

    const started = Date.now();
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`it did not start and list its tools within ${this.#timings.startTimeoutMs} ms`)),
          this.#timings.startTimeoutMs,
        );
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

  #createTransport(): McpTransport {
    this.#stderrTail.length = 0;
    let warnedStdout = false;
    return createTransport(this.#definition, this.#timings.stopGraceMs, {
      onStderrLine: (line) => {
        this.#stderrTail.push(line);
        if (this.#stderrTail.length > STDERR_TAIL_LINES) this.#stderrTail.shift();
        this.#log.debug("MCP server stderr", { ...this.#fields(), line });
      },
      onStdoutNoise: (error) => {
        // Once per process: a server that logs to stdout does it on every call.
        if (warnedStdout) return;
        warnedStdout = true;
        this.#log.warn(
          "MCP server wrote something other than JSON-RPC to stdout (stdout is for MCP messages only; logs belong on stderr); such lines are skipped",
          { ...this.#fields(), error: errorText(error) },
        );
      },
    });
  }

  /** The server's tools listed on `client`, the allow-list applied. */
  #list(client: Client): Promise<DynamicStructuredTool[]> {
    return listServerTools(client, this.#definition, this, { timeoutMs: this.#timings.startTimeoutMs, log: this.#log, fields: this.#fields() });
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
    this.#log.warn(message, {
      ...this.#fields(),
      error: this.#lastError,
      retryInMs: delay,
      ...(this.#stderrTail.length ? { stderr: this.#stderrTail.join("\n") } : {}),
    });
    this.#retryTimer = setTimeout(() => {
      this.#restarts += 1;
      void this.#connect();
    }, delay);
    // Never what keeps the process alive: shutdown closes the supervisor anyway.
    this.#retryTimer.unref();
  }

  async #shutDown(client: Client, transport: McpTransport, options: { terminateSession: boolean }): Promise<void> {
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

  #describeFailure(error: unknown, transport: McpTransport): string {
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
