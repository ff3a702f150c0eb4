// What a kind of agent ("type" in the config file) is to runledger: how its
// entry in the file is read, how its graph is made, and what the API and the MCP
// layer see of it. Every place that treats kinds differently asks the kind
// (index.ts holds them), so a new kind is one file and one line there.
import type { StructuredToolInterface } from "@langchain/core/tools";
import type { BaseCheckpointSaver, CompiledStateGraph } from "@langchain/langgraph";
import { z } from "zod";
import type { AgentDefinitionBase } from "../definitions.ts";
import type { McpToolSource, SourcedTool } from "../tool-info.ts";
import { commonKeys, type DefinitionReader, type JsonPath } from "./definition-reader.ts";
import type { McpServerDefinition } from "./mcp-servers.ts";
import type { RetryPolicy } from "../tool-journal.ts";

/** A compiled agent graph, whatever its state: what a run streams and the read side reads. */
export type CompiledAgentGraph = CompiledStateGraph<any, any, any, any, any, any, any, any, any>;

/** An agent's graph as start-up made it: compiled once, with the checkpointer that keeps conversations. */
export interface AgentGraph {
  compile(checkpointer: BaseCheckpointSaver): CompiledAgentGraph;
}

export interface AgentKind<Definition extends AgentDefinitionBase & { type: string }, Shape extends { type: string } = any> {
  /** Its "type" in the config file, and the API's AgentKind value (upper-cased). */
  type: Definition["type"];
  /** What the API says of it. */
  description: string;
  /** Its entry in the config file: "type", the common keys and its own (kindSchema). */
  schema: z.ZodObject;
  /** Its own keys of an entry the schema accepted, read and checked; the common ones are read for it. */
  read(entry: Shape, at: JsonPath, reader: DefinitionReader): Omit<Definition, keyof AgentDefinitionBase | "type">;
  /** Its graph, made at start-up (before serving: a problem stops start-up as a ConfigError). */
  load(definition: Definition, options: LoadOptions): Promise<AgentGraph>;
  /** The tools a run's model gets, and the API lists (none for a kind whose graph brings its own). */
  tools(definition: Definition, sources: ToolSources): SourcedTool[];
  /** Tools whose calls wait for a person's approval. */
  requireApproval(definition: Definition): readonly string[];
  /** Which of its tools run again when a call of theirs is in doubt (besides those annotated idempotent). */
  retryPolicy(definition: Definition): RetryPolicy;
  /** Its built-in tools' names (an MCP tool of the same name is left out). */
  builtinToolNames(definition: Definition): readonly string[];
  /** Its MCP servers, for the MCP layer to run. */
  mcpServers(definition: Definition): readonly McpServerDefinition[];
}

export interface LoadOptions {
  /** How long a graph module's async factory may take; default 30000 ms. */
  factoryTimeoutMs?: number;
}

export interface ToolSources {
  /** The agents' MCP tools (the McpSupervisor), when any agent has servers. */
  mcp?: McpToolSource;
  /** The built-in tools (runledger's own by default). */
  builtins?: StructuredToolInterface[];
}

/** The schema of a kind's entry: its "type", the keys every kind has, and its own. */
export function kindSchema<Type extends string, Shape extends z.ZodRawShape>(type: Type, own: Shape) {
  return z.strictObject({ type: z.literal(type), ...commonKeys, ...own });
}
