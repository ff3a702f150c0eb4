// What the MCP layer shares between its parts and shows outside: the logger it
// writes to, a server's status, and the timings that bound starts and retries.
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
