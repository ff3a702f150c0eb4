// The kinds of agent runledger serves, by their "type" in the config file. A new
// kind is a file like chat.ts and its line in KINDS.
import type { AgentDefinitionBase } from "../definitions.ts";
import { chatKind } from "./chat.ts";
import { graphKind } from "./graph.ts";
import type { AgentGraph, AgentKind, LoadOptions } from "./kind.ts";

export const KINDS = [chatKind, graphKind] as const;

/** An agent as the config file declares it, of any kind. */
export type AgentDefinition = (typeof KINDS)[number] extends infer K ? (K extends AgentKind<infer D> ? D : never) : never;

/** The kind of a definition. */
export function kindOf(definition: AgentDefinitionBase & { type: string }): AgentKind<AgentDefinition> {
  const kind = KINDS.find((k) => k.type === definition.type);
  if (!kind) throw new Error(`agent ${JSON.stringify(definition.name)} is of no known kind (${JSON.stringify(definition.type)})`);
  return kind as unknown as AgentKind<AgentDefinition>;
}

/**
 * Every agent's graph, for start-up (before serving, so a broken graph module
 * stops it like any other config error). Returns agent name → graph.
 */
export async function loadAgentGraphs(definitions: readonly AgentDefinition[], options: LoadOptions = {}): Promise<Map<string, AgentGraph>> {
  const graphs = new Map<string, AgentGraph>();
  for (const definition of definitions) graphs.set(definition.name, await kindOf(definition).load(definition, options));
  return graphs;
}
