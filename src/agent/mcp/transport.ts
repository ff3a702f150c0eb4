// The transport to one MCP server: a stdio process (in a process group of its
// own, see stdio-transport.ts) or a streamable HTTP endpoint.
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { McpServerDefinition } from "../kinds/mcp-servers.ts";
import { ProcessGroupStdioTransport } from "./stdio-transport.ts";
import { callerFetch, receivesCaller } from "./caller-identity.ts";

export type McpTransport = ProcessGroupStdioTransport | StreamableHTTPClientTransport;

export interface StdioOutput {
  /** Each line the process writes to stderr. */
  onStderrLine(line: string): void;
  /** Something on stdout that is not JSON-RPC (skipped). */
  onStdoutNoise(error: unknown): void;
}

export function createTransport(server: McpServerDefinition, stopGraceMs: number, output: StdioOutput): McpTransport {
  if (server.transport === "http") {
    return new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: server.headers },
      ...(receivesCaller(server) ? { fetch: callerFetch() } : {}),
    });
  }
  return new ProcessGroupStdioTransport({
    command: server.command,
    args: server.args,
    env: server.env,
    cwd: server.cwd,
    stopGraceMs,
    onStderrLine: output.onStderrLine,
    onStdoutNoise: output.onStdoutNoise,
  });
}
