// Custom graphs: a graph agent's module (`"type": "graph"` in RUNLEDGER_CONFIG)
// is imported at start-up and its export turned into an uncompiled StateGraph,
// which runledger compiles with its own checkpointer.
//
// The contract with a graph module:
// - The export (`"export"`, default the module's default export) is a LangGraph.js
//   StateGraph, not compiled, or a function returning one (sync or async). The
//   function is called once, at start-up, with no arguments. Do not compile the
//   graph: runledger compiles it with the checkpointer that keeps conversations.
// - The state has a `messages` channel (MessagesAnnotation, say): a run starts
//   with `{messages: [the user's message]}`, and the API shows the thread's messages.
// - `config.configurable.model` is the run's chat model (a BaseChatModel from
//   @langchain/core: a ChatOllama with the agent's model and think settings, its
//   own client per run). Call it with the node's `config`
//   (`model.invoke(messages, config)`) so its tokens stream to the API with
//   `langgraph_node` set, and so cancelling the run stops the call.
// - `config.writer({name, data})` (the custom stream mode) emits a custom event:
//   `name` a string, `data` any JSON value; the API shows it as CustomEvent.
// - `config.signal` is the run's AbortSignal; pass `config` on to anything that
//   should stop when the run is cancelled.
// - The agent's `recursionLimit` applies to the graph's super-steps.
// The module runs in runledger's process (under tsx, so TypeScript works as is),
// as an ES module whatever its folder's package.json says (graph-module-import.ts).
// test/fixtures/graphs/two-node.ts is a small example.
import { CompiledStateGraph, StateGraph } from "@langchain/langgraph";
import { ConfigError } from "../config.ts";
import { importGraphModule } from "./graph-module-import.ts";

/** Any uncompiled StateGraph, whatever its state. */
export type AnyStateGraph = StateGraph<any, any, any, any, any, any, any, any, any, any>;

export interface LoadGraphModuleOptions {
  /** Put before every message, e.g. the agent's origin in the config file. */
  prefix?: string;
  /** The module's name in messages; default its path. */
  label?: string;
  /** How long an async factory may take; default 30000 ms. */
  factoryTimeoutMs?: number;
}

/**
 * Imports `file` (an absolute path; TypeScript or JavaScript) and returns the
 * uncompiled StateGraph its export `exportName` is or makes. Any problem is a
 * ConfigError with a one-line message naming the module and the export.
 */
export async function loadGraphModule(file: string, exportName = "default", options: LoadGraphModuleOptions = {}): Promise<AnyStateGraph> {
  const where = `${options.prefix ? `${options.prefix}: ` : ""}graph module ${options.label ?? file} export "${exportName}"`;
  const fail = (problem: string): never => {
    throw new ConfigError(`${where}: ${problem}`);
  };

  let namespace: Record<string, unknown>;
  try {
    namespace = await importGraphModule(file);
  } catch (error) {
    return fail(`the module cannot be imported: ${oneLine(error)}`);
  }
  if (!Object.hasOwn(namespace, exportName)) {
    const names = Object.keys(namespace)
      .filter((name) => name !== "__esModule")
      .sort();
    return fail(`not exported (${names.length ? `the module exports: ${names.join(", ")}` : "the module exports nothing"})`);
  }

  let value = namespace[exportName];
  if (typeof value === "function") {
    const factory = value as () => unknown;
    const name = `${exportName === "default" ? factory.name || "the default export" : exportName}()`;
    try {
      value = await withTimeout(
        Promise.resolve().then(() => factory()),
        options.factoryTimeoutMs ?? 30_000,
        `${name} did not return within ${options.factoryTimeoutMs ?? 30_000} ms`,
      );
    } catch (error) {
      return fail(error instanceof FactoryTimeout ? error.message : `${name} threw: ${oneLine(error)}`);
    }
    return checkGraph(value, `${name} returned`, fail);
  }
  return checkGraph(value, "it is", fail);
}

function checkGraph(value: unknown, what: string, fail: (problem: string) => never): AnyStateGraph {
  if (value instanceof CompiledStateGraph || looksCompiled(value)) {
    fail(`${what} a compiled graph; export the StateGraph itself (or a function returning it): runledger compiles it with its own checkpointer`);
  }
  if (!(value instanceof StateGraph)) {
    fail(
      `${what} ${describe(value)}, not a LangGraph StateGraph${looksLikeStateGraph(value) ? " from the @langchain/langgraph runledger uses (is a second copy installed?)" : ""}`,
    );
  }
  const graph = value as AnyStateGraph;
  if (!Object.hasOwn(graph.channels, "messages")) {
    fail(`the graph's state has no "messages" channel; runs start with {messages: [the user's message]} (build the state on MessagesAnnotation)`);
  }
  try {
    // Compiling checks the graph's shape (an entry edge, edges to known nodes); the result is thrown away.
    graph.compile();
  } catch (error) {
    fail(`the graph is invalid: ${oneLine(error)}`);
  }
  return graph;
}

/** Any compiled graph (a Pregel: CompiledStateGraph, an entrypoint), also from another copy of LangGraph. */
function looksCompiled(value: unknown): boolean {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { invoke?: unknown }).invoke === "function" &&
    typeof (value as { getGraph?: unknown }).getGraph === "function"
  );
}

function looksLikeStateGraph(value: unknown): boolean {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { compile?: unknown }).compile === "function" &&
    typeof (value as { addNode?: unknown }).addNode === "function"
  );
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") {
    const name = (value as object).constructor?.name;
    return name && name !== "Object" ? `a ${name}` : "a plain object";
  }
  if (typeof value === "string") return "a string";
  return `a ${typeof value}`;
}

function oneLine(error: unknown): string {
  const text = error instanceof Error ? `${error.name === "Error" ? "" : `${error.name}: `}${error.message}` : String(error);
  return text.split("\n")[0]!.trim();
}

class FactoryTimeout extends Error {}

async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new FactoryTimeout(message)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
