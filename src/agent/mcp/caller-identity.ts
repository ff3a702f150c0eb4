// The caller's identity on a tool call to an HTTP MCP server configured to
// receive it (userHeaders, forwardToken). The connection to a server is shared
// by every run, so the headers cannot be the transport's own: each call runs
// inside an async context holding its caller's headers, and the transport's
// fetch adds them to the call's own request (its POST). Only to that: work the
// call sets off inherits its context too (a ping after a failed POST, a new
// session's initialize, tools/list and SSE stream), and that work is the
// connection's, shared by every caller, so it must not speak for one.
import { AsyncLocalStorage } from "node:async_hooks";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { HttpMcpServerDefinition, McpServerDefinition } from "../kinds/mcp-servers.ts";
import { tokenOf, type RunUser } from "../run-user.ts";

const callerHeaders = new AsyncLocalStorage<Record<string, string>>();

/** Whether the server is configured to receive the caller's identity. */
export function receivesCaller(server: McpServerDefinition): server is HttpMcpServerDefinition {
  return server.transport === "http" && (server.forwardToken || Object.keys(server.userHeaders).length > 0);
}

/** The headers a call on behalf of `user` carries to `server`; a field the caller lacks (a claim it has not) is left out. */
export function headersFor(server: HttpMcpServerDefinition, user: RunUser | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (!user) return headers;
  for (const [header, source] of Object.entries(server.userHeaders)) {
    const value = source.field === "claim" ? user.claims[source.name] : user[source.field];
    if (value === undefined || value === null) continue;
    headers[header] = typeof value === "string" ? value : JSON.stringify(value);
  }
  const token = server.forwardToken ? tokenOf(user) : undefined;
  if (token !== undefined) headers.Authorization = `Bearer ${token}`;
  return headers;
}

/** Runs `call` with `headers` added to the server requests it makes. */
export function withCallerHeaders<T>(headers: Record<string, string>, call: () => T): T {
  return callerHeaders.run(headers, call);
}

/** The requests a call makes for its caller: the tool call, and the reads of resources its result links to. */
const CALLER_METHODS = new Set(["tools/call", "resources/read"]);

/** Whether a request is a POST of one of CALLER_METHODS (the SDK sends each message as a JSON string). */
function isCallerRequest(init: RequestInit | undefined): boolean {
  if (init?.method !== "POST" || typeof init.body !== "string") return false;
  try {
    const message = JSON.parse(init.body) as { method?: unknown } | null;
    return typeof message?.method === "string" && CALLER_METHODS.has(message.method);
  } catch {
    return false;
  }
}

/** A fetch for the server's transport that adds the current call's caller headers to that call's requests. */
export function callerFetch(): FetchLike {
  return (url, init) => {
    const extra = callerHeaders.getStore();
    if (!extra || Object.keys(extra).length === 0 || !isCallerRequest(init)) return fetch(url, init);
    const headers = new Headers(init?.headers);
    for (const [name, value] of Object.entries(extra)) headers.set(name, value);
    return fetch(url, { ...init, headers });
  };
}
