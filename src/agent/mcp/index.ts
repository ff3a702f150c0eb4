// The MCP layer: a supervisor for every agent's MCP servers and the LangChain
// tools it builds over them. See supervisor.ts for the lifecycle.
export { McpSupervisor, type McpSupervisorOptions } from "./supervisor.ts";
export { McpToolError } from "./errors.ts";
export { DEFAULT_MCP_TIMINGS, type McpLogger, type McpServerState, type McpServerStatus, type McpTimings } from "./types.ts";
