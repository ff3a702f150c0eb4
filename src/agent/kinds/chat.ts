// "type": "chat": runledger's tool-calling agent (chat-graph.ts), with its
// system prompt, built-in tools, MCP servers and the tools that need approval.
import { readFileSync } from "node:fs";
import { z } from "zod";
import { DEFAULT_AGENT, type AgentDefaults, type AgentDefinitionBase } from "../definitions.ts";
import { buildChatGraph } from "../chat-graph.ts";
import { agentTools } from "../tool-info.ts";
import { builtinTools } from "../tools.ts";
import { ioReason, stringList } from "./definition-reader.ts";
import { kindSchema, type AgentKind } from "./kind.ts";
import { mcpServerSchema, readMcpServers, type McpServerDefinition } from "./mcp-servers.ts";

/** The built-in tools' names, as `tools` accepts them. */
export const BUILTIN_TOOL_NAMES: readonly string[] = builtinTools().map((t) => t.name);

export interface ChatAgentDefinition extends AgentDefinitionBase {
  type: "chat";
  /** Prepended to every model call, never stored in the thread. */
  systemPrompt: string;
  /** Built-in tools this agent has (names from BUILTIN_TOOL_NAMES), in the file's order. */
  tools: string[];
  /** Its MCP servers, in the file's order (which decides name clashes). */
  mcpServers: McpServerDefinition[];
  /** Tools whose calls wait for a person's approval; each is a built-in tool of the agent or in an allow-list. */
  requireApproval: string[];
  /** Tools whose calls run again when in doubt (after a crash mid-call), as if annotated idempotent. */
  idempotentTools: string[];
  /** Every tool of the agent runs again when in doubt. */
  retryInDoubt: boolean;
}

const schema = kindSchema("chat", {
  systemPrompt: z.string().optional(),
  systemPromptFile: z.string().optional(),
  tools: stringList.optional(),
  mcpServers: z.record(z.string(), mcpServerSchema).optional(),
  requireApproval: stringList.optional(),
  idempotentTools: stringList.optional(),
  retryInDoubt: z.boolean().optional(),
});

export const chatKind: AgentKind<ChatAgentDefinition, z.infer<typeof schema>> = {
  type: "chat",
  description: "runledger's tool-calling agent, with built-in and MCP tools.",
  schema,

  read(agent, at, reader) {
    if (agent.systemPrompt !== undefined && agent.systemPromptFile !== undefined) {
      reader.fail([...at, "systemPromptFile"], `an agent has "systemPrompt" or "systemPromptFile", not both`);
    }
    let systemPrompt = agent.systemPrompt ?? reader.defaults.systemPrompt;
    if (agent.systemPromptFile !== undefined) {
      const promptPath = reader.path(agent.systemPromptFile, [...at, "systemPromptFile"]);
      try {
        systemPrompt = readFileSync(promptPath, "utf8");
      } catch (error) {
        reader.fail([...at, "systemPromptFile"], `${agent.systemPromptFile} cannot be read: ${ioReason(error)}`);
      }
    }

    const tools = agent.tools ?? [...BUILTIN_TOOL_NAMES];
    reader.unique(tools, [...at, "tools"]);
    tools.forEach((tool, i) => {
      if (!BUILTIN_TOOL_NAMES.includes(tool)) {
        reader.fail(
          [...at, "tools", i],
          `"${tool}" is not a built-in tool (built-in tools: ${BUILTIN_TOOL_NAMES.join(", ")}; MCP tools come from "mcpServers")`,
        );
      }
    });

    const { mcpServers, allowedFrom } = readMcpServers(agent.mcpServers ?? {}, tools, [...at, "mcpServers"], reader);

    const requireApproval = agent.requireApproval ?? [];
    reader.unique(requireApproval, [...at, "requireApproval"]);
    requireApproval.forEach((tool, i) => {
      if (tools.includes(tool) || allowedFrom.has(tool)) return;
      const known = [...tools, ...allowedFrom.keys()];
      reader.fail(
        [...at, "requireApproval", i],
        `"${tool}" is not a tool of this agent (${known.length ? `its known tools: ${known.join(", ")}` : "it has no known tools"}); an MCP tool is known here only when its server's "tools" allow-list names it`,
      );
    });

    const idempotentTools = agent.idempotentTools ?? [];
    reader.unique(idempotentTools, [...at, "idempotentTools"]);
    idempotentTools.forEach((tool, i) => {
      if (tools.includes(tool) || allowedFrom.has(tool)) return;
      const known = [...tools, ...allowedFrom.keys()];
      reader.fail(
        [...at, "idempotentTools", i],
        `"${tool}" is not a tool of this agent (${known.length ? `its known tools: ${known.join(", ")}` : "it has no known tools"}); an MCP tool is known here only when its server's "tools" allow-list names it`,
      );
    });

    return { systemPrompt, tools, mcpServers, requireApproval, idempotentTools, retryInDoubt: agent.retryInDoubt ?? false };
  },

  async load(definition) {
    return { compile: (checkpointer) => buildChatGraph({ systemPrompt: definition.systemPrompt, requireApproval: definition.requireApproval, checkpointer }) };
  },

  tools: (definition, { mcp, builtins }) => agentTools(definition, mcp, builtins),
  requireApproval: (definition) => definition.requireApproval,
  retryPolicy: (definition) => ({ idempotentTools: definition.idempotentTools, retryInDoubt: definition.retryInDoubt }),
  builtinToolNames: (definition) => definition.tools,
  mcpServers: (definition) => definition.mcpServers,
};

/** The agent runledger serves without a config file: today's agent, with both built-in tools (or `tools`). */
export function builtinDefaultAgent(defaults: AgentDefaults, tools: readonly string[] = BUILTIN_TOOL_NAMES): ChatAgentDefinition {
  return {
    name: DEFAULT_AGENT,
    type: "chat",
    description: "The built-in tool-calling agent, with a calculator and the current time.",
    model: defaults.model,
    think: defaults.think,
    recursionLimit: defaults.recursionLimit,
    systemPrompt: defaults.systemPrompt,
    tools: [...tools],
    mcpServers: [],
    requireApproval: [],
    idempotentTools: [],
    retryInDoubt: false,
    origin: "the built-in default agent",
  };
}
