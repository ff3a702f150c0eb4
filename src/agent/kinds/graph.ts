// "type": "graph": a custom LangGraph graph from a module (graph-module.ts has
// the module's contract), compiled with runledger's checkpointer.
import { statSync } from "node:fs";
import { z } from "zod";
import type { AgentDefinitionBase } from "../definitions.ts";
import { loadGraphModule } from "../graph-module.ts";
import { ioReason } from "./definition-reader.ts";
import { kindSchema, type AgentKind } from "./kind.ts";
import { NO_RETRY_POLICY } from "../tool-journal.ts";

export interface GraphAgentDefinition extends AgentDefinitionBase {
  type: "graph";
  /** Absolute path of the module (see graph-module.ts for what it must export). */
  module: string;
  /** `module` as the file wrote it, for messages. */
  moduleLabel: string;
  /** The export to take: a StateGraph, or a function returning one. */
  export: string;
}

const schema = kindSchema("graph", {
  module: z.string(),
  export: z.string().optional(),
});

export const graphKind: AgentKind<GraphAgentDefinition, z.infer<typeof schema>> = {
  type: "graph",
  description: "A custom LangGraph graph from a module.",
  schema,

  read(agent, at, reader) {
    const modulePath = reader.path(agent.module, [...at, "module"]);
    let isFile = false;
    try {
      isFile = statSync(modulePath).isFile();
    } catch (error) {
      reader.fail([...at, "module"], `${agent.module} does not exist (${ioReason(error)})`);
    }
    if (!isFile) reader.fail([...at, "module"], `${agent.module} is not a file`);
    const exportName = reader.nonEmpty(agent.export, [...at, "export"]) ?? "default";
    return { module: modulePath, moduleLabel: agent.module, export: exportName };
  },

  async load(definition, options) {
    const graph = await loadGraphModule(definition.module, definition.export, { ...options, prefix: definition.origin, label: definition.moduleLabel });
    return { compile: (checkpointer) => graph.compile({ checkpointer }) };
  },

  // A graph's tools are its own: the API lists none, and runs pass none.
  tools: () => [],
  requireApproval: () => [],
  retryPolicy: () => NO_RETRY_POLICY,
  builtinToolNames: () => [],
  mcpServers: () => [],
};
