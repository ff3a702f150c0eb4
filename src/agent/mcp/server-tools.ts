// A server's tools as LangChain tools, through @langchain/mcp-adapters: listed
// on one client, called through whichever connection is current when a call
// happens (so the tools outlive restarts), the allow-list applied, each
// stopped at once by the run's abort signal, and each request carrying the
// model's tool call id in `_meta`, so a server can deduplicate a call that
// runledger repeats after a crash (TOOL_CALL_ID_META).
import { AsyncLocalStorage } from "node:async_hooks";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { CallToolRequest, CallToolResult, ListToolsRequest, ReadResourceRequest, ReadResourceResult } from "@modelcontextprotocol/sdk/types.js";
import { loadMcpTools } from "@langchain/mcp-adapters";
import type { DynamicStructuredTool } from "@langchain/core/tools";
import type { McpServerDefinition } from "../kinds/mcp-servers.ts";
import { raceAbort } from "./abort.ts";
import { headersFor, receivesCaller, withCallerHeaders } from "./caller-identity.ts";
import type { RunUser } from "../run-user.ts";
import type { McpLogger } from "./types.ts";

/** The key of `params._meta` that carries the model's tool call id: the same for every attempt at one call. */
export const TOOL_CALL_ID_META = "runledger/toolCallId";

/** The tool call being made, from the tool's config down to the request (mcp-adapters passes no id along). */
const currentCall = new AsyncLocalStorage<string>();

/** Where the tools' calls go: the server's current connection. */
export interface ToolCalls {
  callTool(params: CallToolRequest["params"], options?: RequestOptions): Promise<unknown>;
  readResource(params: ReadResourceRequest["params"], options?: RequestOptions): Promise<unknown>;
}

export interface ListOptions {
  /** Longest wait for one page of the listing. */
  timeoutMs: number;
  log: McpLogger;
  /** The server's fields for log lines. */
  fields: Record<string, unknown>;
}

/** The server's tools listed on `client`, the allow-list of `server` applied; their calls go to `calls`. */
export async function listServerTools(client: Client, server: McpServerDefinition, calls: ToolCalls, options: ListOptions): Promise<DynamicStructuredTool[]> {
  let offered: string[] = [];
  // mcp-adapters needs something shaped like an SDK client: listing goes to the client being
  // connected, calls to whichever connection is current when they happen.
  const facade = {
    listTools: async (params?: ListToolsRequest["params"], requestOptions?: RequestOptions) => {
      const result = await client.listTools(params, { timeout: options.timeoutMs, ...requestOptions });
      offered = [...offered, ...result.tools.map((t) => t.name)];
      return result;
    },
    callTool: (params: CallToolRequest["params"], _schema: unknown, requestOptions?: RequestOptions) => {
      const toolCallId = currentCall.getStore();
      const withId = toolCallId === undefined ? params : { ...params, _meta: { ...params._meta, [TOOL_CALL_ID_META]: toolCallId } };
      return calls.callTool(withId, requestOptions) as Promise<CallToolResult>;
    },
    readResource: (params: ReadResourceRequest["params"], requestOptions?: RequestOptions) =>
      calls.readResource(params, requestOptions) as Promise<ReadResourceResult>,
  };
  const loaded = await loadMcpTools(server.name, facade as unknown as Client, { throwOnLoadError: false });
  for (const tool of loaded) wrapCall(tool, server);
  const unusable = offered.filter((name) => !loaded.some((t) => t.name === name));
  if (unusable.length)
    options.log.warn("MCP server offers tools whose input schema could not be used; they are left out", { ...options.fields, tools: unusable });
  const allow = server.tools;
  if (!allow) return loaded;
  const missing = allow.filter((name) => !offered.includes(name));
  if (missing.length) options.log.warn("MCP server does not offer tools its allow-list names", { ...options.fields, tools: missing, offered });
  return loaded.filter((t) => allow.includes(t.name));
}

/**
 * Makes an mcp-adapters tool reject with the run's own abort reason the moment
 * the signal fires. DynamicStructuredTool does not watch the signal itself, and
 * mcp-adapters would wrap the reason as "Error calling tool x: Error: <reason>";
 * the run's cancel must surface as the cancel it is. The call's id (LangChain
 * puts the tool call in the config) is kept for the request's `_meta`. A server
 * configured to receive the caller's identity gets it on the call (the run's
 * `configurable.user`, see caller-identity.ts).
 */
function wrapCall(tool: DynamicStructuredTool, server: McpServerDefinition): void {
  const call = tool.func;
  tool.func = ((input, runManager, config) => {
    const invoke = () => raceAbort(Promise.resolve(call(input, runManager, config)), config?.signal);
    const withIdentity = () =>
      receivesCaller(server) ? withCallerHeaders(headersFor(server, config?.configurable?.user as RunUser | undefined), invoke) : invoke();
    const toolCallId = (config as { toolCall?: { id?: string } } | undefined)?.toolCall?.id;
    return toolCallId ? currentCall.run(toolCallId, withIdentity) : withIdentity();
  }) as typeof tool.func;
}
