// An agent's tools with where each comes from, and the metadata the API shows
// for them (`Agent.tools`): name, description, JSON Schema of the input, source.
import type { StructuredToolInterface } from "@langchain/core/tools";
import { toJsonSchema } from "@langchain/core/utils/json_schema";
import { builtinTools } from "./tools.ts";

/** "builtin" for runledger's own tools, "mcp:<server>" for a tool of the agent's MCP server <server>. */
export type ToolSource = "builtin" | `mcp:${string}`;

export interface SourcedTool {
  tool: StructuredToolInterface;
  source: ToolSource;
}

export interface ToolInfo {
  name: string;
  description: string;
  /** A JSON Schema object for the tool's arguments: what the model is given. */
  inputSchema: Record<string, unknown>;
  source: ToolSource;
}

/** What supplies an agent's MCP tools (the McpSupervisor). */
export interface McpToolSource {
  /** The agent's MCP tools now, in its servers' order, name clashes already resolved. */
  toolsFor(agent: string): SourcedTool[];
}

/** An agent with built-in tools: its name (what the MCP source knows it by) and its built-in tools' names. */
export interface ToolUser {
  name: string;
  tools: readonly string[];
}

/**
 * A chat agent's tools for one run: its built-in tools (in the order the
 * definition lists them), then its MCP tools as the source has them now. Call it
 * per run: a server that came up, restarted or changed its tools since is then
 * reflected. `builtins` lets a caller pass its own instances (a fixed clock).
 */
export function agentTools(agent: ToolUser, mcp?: McpToolSource, builtins: StructuredToolInterface[] = builtinTools()): SourcedTool[] {
  const own: SourcedTool[] = agent.tools.map((name) => {
    const tool = builtins.find((t) => t.name === name);
    if (!tool) throw new Error(`no built-in tool named "${name}"`);
    return { tool, source: "builtin" };
  });
  return [...own, ...(mcp?.toolsFor(agent.name) ?? [])];
}

export function toolInfo({ tool, source }: SourcedTool): ToolInfo {
  const schema = { ...(toJsonSchema(tool.schema) as Record<string, unknown>) };
  // Which JSON Schema dialect zod targets is noise for API clients; MCP schemas arrive without it.
  delete schema.$schema;
  return { name: tool.name, description: tool.description, inputSchema: schema, source };
}

/** The API's view of a chat agent's tools. */
export function agentToolInfo(agent: ToolUser, mcp?: McpToolSource): ToolInfo[] {
  return agentTools(agent, mcp).map(toolInfo);
}
