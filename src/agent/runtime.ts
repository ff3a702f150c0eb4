// Runs agents and reads their threads back: everything LangGraph-specific the
// run service and the read side need sits behind this class. Each agent's
// graph is compiled once, at start-up, with the shared checkpointer; a run
// passes its own model (one ChatOllama per run, carrying the run's abort signal)
// and tools through the config.
import { HumanMessage, coerceMessageLikeToMessage, isAIMessage, isToolMessage, type BaseMessage, type BaseMessageLike } from "@langchain/core/messages";
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { LLMResult } from "@langchain/core/outputs";
import type { StructuredToolInterface } from "@langchain/core/tools";
import type { RunnableConfig } from "@langchain/core/runnables";
import { Command, Overwrite, type BaseCheckpointSaver, type StateSnapshot } from "@langchain/langgraph";
import type { CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { mintCheckpointId } from "../correlation/index.ts";
import { ValidationError } from "../domain/errors.ts";
import { kindOf, type AgentDefinition } from "./kinds/index.ts";
import type { AgentGraph, CompiledAgentGraph } from "./kinds/kind.ts";
import { toolInfo, type McpToolSource, type ToolInfo } from "./tool-info.ts";
import type { McpServerStatus } from "./mcp/types.ts";
import { createRunModel } from "./model.ts";
import { CheckpointObserver } from "./checkpoint-observer.ts";
import type { ModelTransportReport } from "./model-fetch.ts";
import { GraphSettled } from "./graph-settled.ts";
import { TokenTap, messageText } from "./token-tap.ts";
import { ModelSpans } from "./model-spans.ts";
import type { Context as TraceContext } from "@opentelemetry/api";
import { isIdempotent, type RunJournal } from "./tool-journal.ts";
import type { ToolJournal } from "../storage/tool-journal/types.ts";
import type { RunUser } from "./run-user.ts";

export type { RunUser } from "./run-user.ts";

/** How long a stopped run waits for the graph to store its last writes before its outcome is read. */
const SETTLE_TIMEOUT_MS = 5_000;

/** The one mapping between product and framework: a conversation id is a thread id. */
export function threadConfig(conversationId: string) {
  return { configurable: { thread_id: conversationId } };
}

export interface ModelCallUsage {
  inputTokens: number;
  outputTokens: number;
  /** Ollama's total_duration for the call, in nanoseconds (0 when not reported). */
  durationNs: number;
}

export interface RunHooks {
  onToken(text: string, messageId: string | null, node: string): void;
  /** The model asked for a tool call (attempt 1), or a call in doubt is invoked again (its next attempt). */
  onToolCall(toolCallId: string, name: string, args: unknown, attempt: number): void;
  /** A call's result, with the attempt it comes from (an earlier one when the journal had it). */
  onToolResult(toolCallId: string, name: string, content: string, isError: boolean, attempt: number): void;
  onCheckpoint(checkpointId: string): void;
  /** What a graph emitted through LangGraph's custom stream writer. */
  onCustom(name: string, data: unknown): void;
  /** A model call finished, with what Ollama reported about it. */
  onModelCall(usage: ModelCallUsage): void;
  /**
   * Ollama answered 503 (its queue full): the call is sent again once this
   * resolves. Without it, after the backoff alone.
   */
  onModelBusy?(backoffMs: number): Promise<void>;
}

/** What a run feeds the graph. */
export type RunInput =
  | { kind: "message"; text: string }
  /** Re-runs the pending step (after a failure, cancel or interruption). */
  | { kind: "continue" }
  /** Answers the thread's pending interrupts, by interrupt id. */
  | { kind: "answers"; answers: Record<string, unknown> };

export interface PendingInterrupt {
  /** LangGraph's interrupt id. */
  id: string;
  /** The node that raised it. */
  node: string;
  value: unknown;
}

export interface ThreadState {
  messages: BaseMessage[];
  /** LangGraph's `next`: nodes still to run. Non-empty means work is pending. */
  next: string[];
  checkpointId: string | null;
  /** Interrupts waiting for an answer (from the pending tasks, not from `next`). */
  interrupts: PendingInterrupt[];
}

/** One checkpoint's state as LangGraph's state reader rebuilds it. */
export interface CheckpointState {
  checkpointId: string;
  messages: BaseMessage[];
  next: string[];
  /** The tasks pending at this checkpoint (a failed task keeps its id). */
  tasks: { id: string; name: string }[];
  /** Every channel's value, as LangGraph's state reader gives them (messages as message objects). */
  values: Record<string, unknown>;
  /** LangGraph's checkpoint metadata ({source, step, parents, ...}). */
  metadata: Record<string, unknown>;
}

/** An agent's graph as LangGraph draws it (getGraphAsync with subgraphs expanded). */
export interface AgentGraphShape {
  /** Node ids; a subgraph's nodes are named "<node>:<inner node>". */
  nodes: string[];
  edges: { source: string; target: string; conditional: boolean }[];
  mermaid: string;
}

/** An agent as runledger serves it. */
export interface Agent {
  definition: AgentDefinition;
  /** Its tools as the API shows them (as its kind says: a graph's tools are its own). */
  tools(): ToolInfo[];
  /** Its MCP servers as they are now. */
  mcpServers(): McpServerStatus[];
  /** Its graph's nodes and edges. */
  graph(): Promise<AgentGraphShape>;
}

/** Where the agents' MCP tools come from, and how their servers are doing (the McpSupervisor). */
export interface McpTools extends McpToolSource {
  status(agent: string): McpServerStatus[];
}

interface CompiledAgent {
  definition: AgentDefinition;
  graph: CompiledAgentGraph;
}

export interface AgentRuntimeOptions {
  /** The storage backend's saver; every graph is compiled with it (observed). */
  checkpointer: BaseCheckpointSaver;
  agents: AgentDefinition[];
  /** Every agent's graph as start-up made it (loadAgentGraphs), by agent name. */
  graphs: Map<string, AgentGraph>;
  /** The agents' MCP tools. */
  mcp?: McpTools;
  /** The built-in tools (runledger's own by default). */
  builtins?: StructuredToolInterface[];
  ollama: { baseUrl: string; idleTimeoutMs: number };
}

export class AgentRuntime {
  readonly #options: AgentRuntimeOptions;
  readonly #observer: CheckpointObserver;
  readonly #agents = new Map<string, CompiledAgent>();
  /** Each agent's drawn graph: a compiled graph never changes. */
  readonly #drawn = new Map<string, Promise<AgentGraphShape>>();

  constructor(options: AgentRuntimeOptions) {
    this.#options = options;
    this.#observer = new CheckpointObserver(options.checkpointer);
    for (const definition of options.agents) {
      this.#agents.set(definition.name, { definition, graph: options.graphs.get(definition.name)!.compile(this.#observer) });
    }
  }

  /** The agents, in the configuration's order. */
  agents(): Agent[] {
    return [...this.#agents.values()].map(({ definition }) => ({
      definition,
      tools: () => this.#tools(definition).map(toolInfo),
      mcpServers: () => this.#options.mcp?.status(definition.name) ?? [],
      graph: () => this.#graphOf(definition.name),
    }));
  }

  #graphOf(name: string): Promise<AgentGraphShape> {
    let drawn = this.#drawn.get(name);
    if (!drawn) {
      drawn = (async () => {
        // xray: a compiled graph used as a node is drawn with its own nodes.
        const graph = await this.#compiled(name).graph.getGraphAsync({ xray: true });
        return {
          nodes: Object.values(graph.nodes).map((node) => node.id),
          edges: graph.edges.map((edge) => ({ source: edge.source, target: edge.target, conditional: edge.conditional === true })),
          mermaid: graph.drawMermaid({ withStyles: false }),
        };
      })();
      drawn.catch(() => this.#drawn.delete(name));
      this.#drawn.set(name, drawn);
    }
    return drawn;
  }

  /** The nodes an update may be written as (LangGraph's `asNode`): the agent graph's own, START included. */
  updateNodes(agentName: string): string[] {
    return Object.keys(this.#compiled(agentName).graph.nodes);
  }

  /** The state channels of the agent's graph (what `values` of an update may name). */
  stateChannels(agentName: string): string[] {
    const graph = this.#compiled(agentName).graph as unknown as { builder?: { channels?: Record<string, unknown> } };
    return Object.keys(graph.builder?.channels ?? {});
  }

  /**
   * Writes `values` into the thread as a new checkpoint whose parent is
   * `checkpointId`, as if node `asNode` had written them (LangGraph's
   * updateState: each channel's reducer applies, and `next` follows that node's
   * edges). Returns the new checkpoint's id; never calls a model.
   */
  async updateState(conversationId: string, agentName: string, checkpointId: string, values: Record<string, unknown>, asNode: string | null): Promise<string> {
    const config = await this.#compiled(agentName).graph.updateState(
      { configurable: { thread_id: conversationId, checkpoint_id: checkpointId } },
      values,
      asNode ?? undefined,
    );
    return String(config.configurable?.checkpoint_id);
  }

  agent(name: string): Agent | undefined {
    return this.agents().find((a) => a.definition.name === name);
  }

  /**
   * Executes one run of `agentName` on the conversation's thread. Resolves when
   * the graph finishes (or pauses on an interrupt); rejects with the cause when
   * it fails (the caller classifies it).
   */
  async execute(run: {
    agentName: string;
    conversationId: string;
    /** The run's id: the journal records which run made each attempt, and LangSmith's metadata names it. */
    runId: string;
    /** Where the tool calls are journaled; without it, tools run unguarded (a graph driven outside the run service). */
    journal?: ToolJournal;
    /** Who the run works for, passed to the graph as `config.configurable.user` (LangGraph keeps configurable out of checkpoints). */
    user: RunUser;
    input: RunInput;
    signal: AbortSignal;
    report: ModelTransportReport;
    hooks: RunHooks;
    /** The run's span context when tracing is on: model and tool calls get spans under it. */
    trace?: TraceContext;
  }): Promise<void> {
    const agent = this.#compiled(run.agentName);
    const { definition } = agent;
    const model = createRunModel(
      { baseUrl: this.#options.ollama.baseUrl, idleTimeoutMs: this.#options.ollama.idleTimeoutMs, model: definition.model, think: definition.think },
      run.signal,
      run.report,
      run.hooks.onModelBusy && ((backoffMs) => run.hooks.onModelBusy!(backoffMs)),
    );
    const sourced = this.#tools(definition);
    const tools = sourced.map((t) => t.tool);
    const policy = kindOf(definition).retryPolicy(definition);
    // Which attempt each call is on in this run, for the events of its results.
    const attempts = new Map<string, number>();
    const journal: RunJournal | undefined = run.journal && {
      store: run.journal,
      conversationId: run.conversationId,
      runId: run.runId,
      idempotent: (name) =>
        isIdempotent(
          tools.find((t) => t.name === name),
          name,
          policy,
        ),
      now: () => new Date(),
      onAttempt: (call, attempt, invoked) => {
        attempts.set(call.id, attempt);
        // The model's request was told when it was made; a retry is told as the call it is.
        if (invoked && attempt > 1) run.hooks.onToolCall(call.id, call.name, call.args, attempt);
      },
    };
    const input =
      run.input.kind === "message"
        ? { messages: [new HumanMessage(run.input.text)] }
        : run.input.kind === "answers"
          ? new Command({ resume: run.input.answers })
          : null;
    const settled = new GraphSettled();
    const spans =
      run.trace &&
      new ModelSpans(run.trace, new Map(sourced.flatMap(({ tool, source }) => (source.startsWith("mcp:") ? [[tool.name, source.slice(4)] as const] : []))));
    const unwatch = this.#observer.watch(run.conversationId, (id) => run.hooks.onCheckpoint(id));
    try {
      const stream = await agent.graph.stream(input as never, {
        configurable: { thread_id: run.conversationId, model, tools, user: run.user, journal },
        // Tokens come through the TokenTap, not the "messages" mode (see token-tap.ts).
        streamMode: ["updates", "custom"],
        // Tool calls and custom events from inside a subgraph (a compiled graph as a node) too; items come as [namespace, mode, payload].
        subgraphs: true,
        recursionLimit: definition.recursionLimit,
        // Each step is stored before the next starts: the user's message is on disk before the model is called.
        durability: "sync",
        callbacks: spans ? [settled, new UsageMeter(run.hooks), new TokenTap(run.hooks), spans] : [settled, new UsageMeter(run.hooks), new TokenTap(run.hooks)],
        // What LangSmith shows with the run's trace (when LANGSMITH_TRACING is on); LangGraph keeps metadata out of checkpoints.
        runName: definition.name,
        metadata: { run_id: run.runId, conversation_id: run.conversationId, agent: definition.name },
        signal: run.signal,
      });
      const events = new RunEvents(run.hooks, attempts);
      for await (const item of stream as AsyncIterable<StreamItem>) events.dispatch(item);
    } catch (error) {
      await settled.wait(SETTLE_TIMEOUT_MS);
      throw error;
    } finally {
      unwatch();
      spans?.endAll();
    }
  }

  /**
   * Copies the chain of checkpoints that leads to `checkpointId` (its ancestors
   * and itself, oldest first) from one thread to another, under new checkpoint
   * ids: the new thread's history is the source's up to that point. Pending
   * writes stay behind: LangGraph names a step's tasks after their checkpoint, so
   * under a new id they would belong to no task (a copied `__error__` would read
   * as a failure of the fork's own runs, a copied answer or result would never
   * be used); the pending step starts afresh in the copy. Through the saver's
   * own API, so it works on every backend. Returns the copy's head (the new id
   * of `checkpointId`) and how many messages the copy holds. A chain longer than
   * `maxCheckpoints` (MAX_FORK_CHECKPOINTS; 0 is no limit) is a ValidationError,
   * found while walking it, before anything is written.
   */
  async copyThread(
    sourceThreadId: string,
    checkpointId: string,
    targetThreadId: string,
    agentName: string,
    maxCheckpoints = 0,
  ): Promise<{ head: string; messageCount: number }> {
    const saver = this.#options.checkpointer;
    const chain: CheckpointTuple[] = [];
    let at: RunnableConfig | undefined = { configurable: { thread_id: sourceThreadId, checkpoint_ns: "", checkpoint_id: checkpointId } };
    while (at) {
      if (maxCheckpoints > 0 && chain.length >= maxCheckpoints) {
        throw new ValidationError(
          `forking at checkpoint ${checkpointId} would copy more than ${maxCheckpoints} checkpoints (MAX_FORK_CHECKPOINTS); fork at an earlier one`,
          "checkpointId",
        );
      }
      const tuple = await saver.getTuple(at);
      // Retention may have pruned an ancestor (docs/retention.md): the history copied starts after it.
      if (!tuple && chain.length > 0) break;
      if (!tuple) throw new Error(`checkpoint ${String(at.configurable?.checkpoint_id)} of thread ${sourceThreadId} is missing`);
      chain.unshift(tuple);
      at = tuple.parentConfig;
    }
    let parent: string | undefined;
    for (const tuple of chain) {
      const checkpoint = { ...tuple.checkpoint, id: mintCheckpointId() };
      await saver.put(
        { configurable: { thread_id: targetThreadId, checkpoint_ns: "", checkpoint_id: parent } },
        checkpoint,
        tuple.metadata!,
        checkpoint.channel_versions,
      );
      parent = checkpoint.id;
    }
    // Read back through the agent's graph: the copy is a thread it can continue.
    const copied = await this.readThread(targetThreadId, agentName);
    if (copied.checkpointId !== parent) throw new Error(`the copy of thread ${sourceThreadId} reads back at ${copied.checkpointId}, not ${parent}`);
    return { head: parent!, messageCount: copied.messages.length };
  }

  /** The thread's latest state; never calls a model. */
  async readThread(conversationId: string, agentName: string): Promise<ThreadState> {
    const state = await this.#reader(agentName).getState(threadConfig(conversationId));
    const messages = ((state.values as { messages?: BaseMessage[] } | undefined)?.messages ?? []) as BaseMessage[];
    const interrupts = (state.tasks ?? []).flatMap((task) =>
      (task.interrupts ?? []).map((i) => ({ id: String(i.id), node: task.name, value: i.value as unknown })),
    );
    // LangGraph's `next` leaves out tasks that already stored their writes. When every task of a step
    // did and the process died before the step's checkpoint, `next` is empty though the step is not
    // done: its tasks are the work left (a resume commits their writes without running them again).
    const next = state.next?.length ? [...state.next] : (state.tasks ?? []).map((task) => task.name);
    return { messages, next, checkpointId: (state.config?.configurable?.checkpoint_id as string | undefined) ?? null, interrupts };
  }

  /**
   * The states of the thread's checkpoints, oldest first, from one pass over its
   * history; with a range, only the checkpoints from `from` to `to` (inclusive)
   * are deserialized, and with its `count` (how many the range holds, when the
   * caller knows) only that many are read from the database at all: without a
   * limit the saver fetches every older checkpoint too. Never calls a model.
   */
  async readHistory(conversationId: string, agentName: string, range?: { from: string; to: string; count?: number }): Promise<CheckpointState[]> {
    // `before` is exclusive; `to` followed by one more character sorts after `to` and before any later id of the same length.
    const options = range ? { before: { configurable: { checkpoint_id: `${range.to}0` } }, ...(range.count ? { limit: range.count } : {}) } : undefined;
    const states: CheckpointState[] = [];
    for await (const snapshot of this.#reader(agentName).getStateHistory(threadConfig(conversationId), options)) {
      const state = checkpointState(snapshot);
      if (range && state.checkpointId < range.from) break; // newest first: the rest are older still
      states.push(state);
    }
    return states.reverse();
  }

  /** One checkpoint's state, or null when the thread has no such checkpoint; never calls a model. */
  async readCheckpoint(conversationId: string, agentName: string, checkpointId: string): Promise<CheckpointState | null> {
    const snapshot = await this.#reader(agentName).getState({ configurable: { thread_id: conversationId, checkpoint_id: checkpointId } });
    // A missing checkpoint comes back as an empty snapshot without a creation time.
    return snapshot.createdAt === undefined ? null : checkpointState(snapshot);
  }

  #tools(definition: AgentDefinition) {
    return kindOf(definition).tools(definition, { mcp: this.#options.mcp, builtins: this.#options.builtins });
  }

  #compiled(name: string): CompiledAgent {
    const agent = this.#agents.get(name);
    if (!agent) throw new Error(`agent ${JSON.stringify(name)} is not configured`);
    return agent;
  }

  /**
   * The graph that reads an agent's threads: `next` and pending tasks depend on
   * the graph's nodes. A conversation whose agent is no longer configured is read
   * with the first agent's graph: its messages are right, `next` may not be.
   */
  #reader(name: string): CompiledAgent["graph"] {
    return (this.#agents.get(name) ?? this.#agents.values().next().value!).graph;
  }
}

/** An item of a stream opened with `subgraphs: true`: the namespace of the graph it comes from (empty for the agent's own graph), the mode, the payload. */
type StreamItem = [namespace: string[], mode: string, payload: unknown];

/** Turns the items of one run's graph stream into run events. */
class RunEvents {
  /** The tool calls told, by id, with their tool's name. */
  readonly #calls = new Map<string, string>();
  /** The nodes that ran a graph of their own, as "namespace|node" (from the namespaces of the items that graph streamed). */
  readonly #graphNodes = new Set<string>();

  constructor(
    private readonly hooks: RunHooks,
    private readonly attempts: ReadonlyMap<string, number>,
  ) {}

  dispatch([namespace, mode, payload]: StreamItem): void {
    const { hooks } = this;
    // Each segment is "node:task id", the node of the enclosing graph that runs this one.
    namespace.forEach((segment, depth) => this.#graphNodes.add(nodeKey(namespace.slice(0, depth), segment.slice(0, segment.lastIndexOf(":")))));
    if (mode === "updates") {
      for (const [node, updates] of Object.entries(payload as Record<string, unknown>)) {
        // A graph's output is its whole state, the thread's earlier messages with it; what it added was told by its own nodes.
        if (this.#graphNodes.has(nodeKey(namespace, node))) continue;
        // A node that writes a channel more than once in a step has its updates listed.
        for (const update of [updates].flat()) {
          if (update && typeof update === "object" && "messages" in update) this.#toolEvents(updateMessages(update.messages));
        }
      }
    } else if (mode === "custom") {
      const named = payload as { name?: unknown; data?: unknown } | null;
      if (named !== null && typeof named === "object" && typeof named.name === "string") hooks.onCustom(named.name, named.data ?? null);
      else hooks.onCustom("custom", payload ?? null);
    }
  }

  #toolEvents(messages: BaseMessage[]): void {
    for (const msg of messages) {
      if (isAIMessage(msg)) {
        for (const call of msg.tool_calls ?? []) {
          // A message can come again (an approval's edit replaces it in place): each call is told once.
          const id = call.id ?? "";
          if (id && this.#calls.has(id)) continue;
          this.#calls.set(id, call.name);
          this.hooks.onToolCall(id, call.name, call.args, 1);
        }
      } else if (isToolMessage(msg)) {
        const name = msg.name ?? this.#calls.get(msg.tool_call_id) ?? "";
        this.hooks.onToolResult(msg.tool_call_id, name, messageText(msg), msg.status === "error", this.attempts.get(msg.tool_call_id) ?? 1);
      }
    }
  }
}

function nodeKey(namespace: string[], node: string): string {
  return [...namespace, node].join("|");
}

/**
 * The messages a node's update writes, in every form LangGraph's messages
 * reducer takes: one message or a list; message objects, chunks, or what
 * coerceMessageLikeToMessage turns into one (`{role: "assistant", tool_calls}`,
 * `{type: "tool", tool_call_id}`, OpenAI-style tool calls, serialized messages);
 * an Overwrite's value. What cannot be coerced is left out: the reducer fails
 * the step for it, the events need not.
 */
export function updateMessages(value: unknown): BaseMessage[] {
  const written = Overwrite.isInstance(value) ? value.value : value;
  if (written === undefined || written === null) return [];
  return (Array.isArray(written) ? written : [written]).flatMap((item: unknown) => {
    try {
      return [coerceMessageLikeToMessage(item as BaseMessageLike)];
    } catch {
      return [];
    }
  });
}

/** Reads what Ollama reported at the end of each model call (the callbacks have it; the messages stream does not). */
class UsageMeter extends BaseCallbackHandler {
  name = "usage-meter";
  constructor(private readonly hooks: RunHooks) {
    super();
  }
  override handleLLMEnd(output: LLMResult): void {
    const generation = output.generations[0]?.[0] as
      { message?: { usage_metadata?: { input_tokens?: number; output_tokens?: number }; response_metadata?: { total_duration?: number } } } | undefined;
    const message = generation?.message;
    this.hooks.onModelCall({
      inputTokens: message?.usage_metadata?.input_tokens ?? 0,
      outputTokens: message?.usage_metadata?.output_tokens ?? 0,
      durationNs: Number(message?.response_metadata?.total_duration ?? 0),
    });
  }
}

function checkpointState(snapshot: StateSnapshot): CheckpointState {
  return {
    checkpointId: String(snapshot.config?.configurable?.checkpoint_id),
    messages: ((snapshot.values as { messages?: BaseMessage[] } | undefined)?.messages ?? []) as BaseMessage[],
    next: [...(snapshot.next ?? [])],
    tasks: (snapshot.tasks ?? []).map((task) => ({ id: task.id, name: task.name })),
    values: (snapshot.values ?? {}) as Record<string, unknown>,
    metadata: (snapshot.metadata ?? {}) as Record<string, unknown>,
  };
}
