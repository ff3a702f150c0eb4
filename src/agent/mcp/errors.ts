// The MCP layer's errors in words the model (a tool error) and the log read:
// why a call failed, how a server process ended, any error in one line.
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import type { McpServerDefinition } from "../kinds/mcp-servers.ts";

/**
 * A tool call that failed for a reason the model should read. Named
 * "ToolException" because @langchain/mcp-adapters passes errors of that name
 * through unchanged instead of prefixing "Error calling tool ...: Error: ".
 */
export class McpToolError extends Error {
  override name = "ToolException";
}

/** A failed call to `what` (a tool, a resource) as the model reads it; `lastError` is why the server last went down. */
export function callError(server: McpServerDefinition, lastError: string | undefined, error: unknown, what: string, timeoutMs: number): McpToolError {
  const name = `MCP server "${server.name}"`;
  const next = server.transport === "stdio" ? "runledger restarts it" : "runledger reconnects once it answers again";
  if (error instanceof McpError && error.code === ErrorCode.ConnectionClosed) {
    return new McpToolError(`${name} went away during the call to ${what} (${lastError ?? "connection closed"}); ${next}`);
  }
  if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
    return new McpToolError(`${name} did not finish ${what} within ${timeoutMs} ms without reporting progress, so the call was cancelled`);
  }
  // An error the server answered with (unknown tool, invalid arguments, its own failure).
  if (error instanceof McpError) return new McpToolError(`${name} refused the call to ${what}: ${error.message}`);
  // Anything else failed on the way: a POST that found no server, a stream cut mid-answer.
  return new McpToolError(`${name} went away during the call to ${what} (${errorText(error)}); ${next}`);
}

export function exitText(exit: { code: number | null; signal: NodeJS.Signals | null } | undefined): string {
  if (!exit) return "the process ended";
  return exit.signal ? `the process was killed by ${exit.signal}` : `the process exited with code ${exit.code}`;
}

export function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  const detail = cause && typeof cause.code === "string" ? ` (${cause.code})` : "";
  return `${error.message.split("\n")[0]}${detail}`;
}
