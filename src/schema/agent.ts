// Agent: what runledger serves (RUNLEDGER_CONFIG), with its tools; the agents query.
import type { ToolInfo } from "../agent/tool-info.ts";
import { builder } from "./builder.ts";
import { AgentKind, McpServerState } from "./enums.ts";
import type { McpServerStatus } from "../agent/mcp/types.ts";
import { kindOf } from "../agent/kinds/index.ts";
import { Agent } from "./refs.ts";
import type { AgentGraphShape } from "../agent/runtime.ts";

const AgentTool = builder.objectRef<ToolInfo & { requiresApproval: boolean }>("AgentTool").implement({
  description: "A tool an agent's model may call.",
  fields: (t) => ({
    name: t.exposeString("name"),
    description: t.exposeString("description"),
    inputSchema: t.field({ type: "JSON", description: "JSON Schema of the tool's arguments, as the model is given it.", resolve: (tool) => tool.inputSchema }),
    source: t.exposeString("source", { description: "builtin, or mcp:<server> for a tool of one of the agent's MCP servers." }),
    requiresApproval: t.exposeBoolean("requiresApproval", {
      description: "Calls wait for a person's approval (a WAITING run with a tool_approval interrupt).",
    }),
  }),
});

const McpServer = builder.objectRef<McpServerStatus>("McpServer").implement({
  description: "One of an agent's MCP servers, as it is now: runledger starts them with the server and restarts those that die.",
  fields: (t) => ({
    name: t.exposeString("server"),
    transport: t.exposeString("transport", { description: "stdio or http." }),
    state: t.field({ type: McpServerState, resolve: (s) => s.state }),
    tools: t.exposeStringList("toolNames", { description: "The tools the agent gets from it (allow-list applied), from its last listing." }),
    lastError: t.exposeString("lastError", { nullable: true, description: "Why it is down, or why it last went down." }),
    restarts: t.exposeInt("restarts"),
    retryAt: t.expose("retryAt", { type: "DateTime", nullable: true, description: "When a down server is tried again." }),
  }),
});

const GraphNode = builder.objectRef<{ id: string }>("GraphNode").implement({
  description: "A node of an agent's graph. Its id is the node's name (not a Node id); a subgraph's nodes are named <node>:<inner node>.",
  fields: (t) => ({ id: t.exposeString("id", { description: "The node's name: __start__ and __end__ are LangGraph's entry and exit." }) }),
});

const GraphEdge = builder.objectRef<{ source: string; target: string; conditional: boolean }>("GraphEdge").implement({
  description: "An edge of an agent's graph.",
  fields: (t) => ({
    source: t.exposeString("source"),
    target: t.exposeString("target"),
    conditional: t.exposeBoolean("conditional", { description: "Taken only when the source's routing function picks it." }),
  }),
});

const AgentGraphRef = builder.objectRef<AgentGraphShape>("AgentGraph").implement({
  description: "An agent's graph as LangGraph draws it (getGraph), subgraphs expanded.",
  fields: (t) => ({
    nodes: t.field({ type: [GraphNode], resolve: (g) => g.nodes.map((id) => ({ id })) }),
    edges: t.field({ type: [GraphEdge], resolve: (g) => g.edges }),
    mermaid: t.exposeString("mermaid", { description: "The graph as a Mermaid flowchart; conditional edges are dotted." }),
  }),
});

Agent.implement({
  description: "An agent runledger serves. A conversation keeps the agent it started with.",
  fields: (t) => ({
    name: t.string({ resolve: (a) => a.definition.name }),
    description: t.string({ resolve: (a) => a.definition.description }),
    kind: t.field({ type: AgentKind, resolve: (a) => a.definition.type }),
    model: t.string({ description: "The Ollama model its runs talk to.", resolve: (a) => a.definition.model }),
    mcpServers: t.field({ type: [McpServer], resolve: (a) => a.mcpServers() }),
    graph: t.field({ type: AgentGraphRef, description: "Its graph's nodes and edges, for drawing.", resolve: (a) => a.graph() }),
    tools: t.field({
      type: [AgentTool],
      description:
        "Its built-in and MCP tools as they are now (an MCP server that is down lists the tools it had). A graph agent's tools are its own: none are listed.",
      resolve: (a) => {
        const approval = new Set(kindOf(a.definition).requireApproval(a.definition));
        return a.tools().map((tool) => ({ ...tool, requiresApproval: approval.has(tool.name) }));
      },
    }),
  }),
});

builder.queryField("agents", (t) =>
  t.field({
    type: [Agent],
    description: "The agents runledger serves, in the configuration's order; startRun without an agent runs `default`.",
    resolve: (_root, _args, ctx) => ctx.agent.agents(),
  }),
);
