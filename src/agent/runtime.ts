// Runs the agent graph for one run and reads threads back. Everything LangGraph-
// specific that the run service needs sits behind this class.
import { HumanMessage, isAIMessageChunk, isAIMessage, isToolMessage, type BaseMessage, type BaseMessageChunk } from "@langchain/core/messages";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import type { StateSnapshot } from "@langchain/langgraph";
import type { StructuredToolInterface } from "@langchain/core/tools";
import { buildAgentGraph, modelCaller, threadConfig, AGENT_NODE, TOOLS_NODE, type AgentGraph } from "./graph.ts";
import { createRunModel, type ModelSettings } from "./model.ts";
import { ObservedCheckpointer } from "./observed-checkpointer.ts";
import type { ModelTransportReport } from "./model-fetch.ts";
import { GraphSettled } from "./graph-settled.ts";

/** How long a stopped run waits for the graph to store its last writes before its outcome is read. */
const SETTLE_TIMEOUT_MS = 5_000;

export interface RunHooks {
  onToken(text: string, messageId: string | null, node: string): void;
  onToolCall(toolCallId: string, name: string, args: unknown): void;
  onToolResult(toolCallId: string, name: string, content: string, isError: boolean): void;
  onCheckpoint(checkpointId: string): void;
}

export interface ThreadState {
  messages: BaseMessage[];
  /** LangGraph's `next`: nodes still to run. Non-empty means work is pending. */
  next: string[];
  checkpointId: string | null;
}

/** One checkpoint's state as LangGraph's state reader rebuilds it. */
export interface CheckpointState {
  checkpointId: string;
  messages: BaseMessage[];
  next: string[];
  /** The tasks pending at this checkpoint (a failed task keeps its id). */
  tasks: { id: string; name: string }[];
}

export interface AgentRuntimeOptions {
  checkpointer: BaseCheckpointSaver;
  model: ModelSettings;
  tools: StructuredToolInterface[];
  systemPrompt: string;
  recursionLimit: number;
}

export class AgentRuntime {
  /** Compiled once with a model that must never be called: reads never reach the model. */
  readonly #reader: AgentGraph;

  constructor(private readonly options: AgentRuntimeOptions) {
    this.#reader = buildAgentGraph({
      callModel: () => Promise.reject(new Error("reads must never call the model")),
      tools: options.tools,
      checkpointer: options.checkpointer,
    });
  }

  /**
   * Executes one run on the conversation's thread: `message` appends a user turn,
   * null continues the pending step. Resolves when the graph finishes; rejects with
   * the cause when it fails (the caller classifies it).
   */
  async execute(conversationId: string, message: string | null, signal: AbortSignal, report: ModelTransportReport, hooks: RunHooks): Promise<void> {
    const model = createRunModel(this.options.model, signal, report);
    const checkpointer = new ObservedCheckpointer(this.options.checkpointer, (id) => hooks.onCheckpoint(id));
    const callModel = modelCaller(model, this.options.tools, this.options.systemPrompt);
    const graph = buildAgentGraph({ callModel, tools: this.options.tools, checkpointer });
    const input = message === null ? null : { messages: [new HumanMessage(message)] };
    const settled = new GraphSettled();
    try {
      await this.#stream(graph, conversationId, input, signal, settled, hooks);
    } catch (error) {
      await settled.wait(SETTLE_TIMEOUT_MS);
      throw error;
    }
  }

  async #stream(graph: AgentGraph, conversationId: string, input: { messages: BaseMessage[] } | null, signal: AbortSignal, settled: GraphSettled, hooks: RunHooks): Promise<void> {
    const stream = await graph.stream(input, {
      ...threadConfig(conversationId),
      streamMode: ["messages", "updates"],
      recursionLimit: this.options.recursionLimit,
      // Each step is stored before the next starts: the user's message is on disk before the model is called.
      durability: "sync",
      callbacks: [settled],
      signal,
    });
    for await (const [mode, payload] of stream as AsyncIterable<[string, unknown]>) {
      if (mode === "messages") {
        const [chunk, meta] = payload as [BaseMessage, { langgraph_node?: string }];
        const node = meta?.langgraph_node ?? AGENT_NODE;
        if (node === AGENT_NODE && isAIMessageChunk(chunk as BaseMessageChunk)) {
          const text = messageText(chunk);
          if (text) hooks.onToken(text, chunk.id ?? null, node);
        }
      } else if (mode === "updates") {
        for (const [node, update] of Object.entries(payload as Record<string, { messages?: BaseMessage[] } | undefined>)) {
          for (const msg of update?.messages ?? []) {
            if (node === AGENT_NODE && isAIMessage(msg)) {
              for (const call of msg.tool_calls ?? []) hooks.onToolCall(call.id ?? "", call.name, call.args);
            } else if (node === TOOLS_NODE && isToolMessage(msg)) {
              hooks.onToolResult(msg.tool_call_id, msg.name ?? "", messageText(msg), msg.status === "error");
            }
          }
        }
      }
    }
  }

  /** The thread's latest state; never calls the model. */
  async readThread(conversationId: string): Promise<ThreadState> {
    const state = await this.#reader.getState(threadConfig(conversationId));
    const messages = ((state.values as { messages?: BaseMessage[] } | undefined)?.messages ?? []) as BaseMessage[];
    return { messages, next: [...(state.next ?? [])], checkpointId: (state.config?.configurable?.checkpoint_id as string | undefined) ?? null };
  }

  /**
   * The states of the thread's checkpoints, oldest first, from one pass over its
   * history; with a range, only the checkpoints from `from` to `to` (inclusive)
   * are deserialized. Never calls the model.
   */
  async readHistory(conversationId: string, range?: { from: string; to: string }): Promise<CheckpointState[]> {
    // `before` is exclusive; `to` followed by one more character sorts after `to` and before any later id of the same length.
    const options = range ? { before: { configurable: { checkpoint_id: `${range.to}0` } } } : undefined;
    const states: CheckpointState[] = [];
    for await (const snapshot of this.#reader.getStateHistory(threadConfig(conversationId), options)) {
      const state = checkpointState(snapshot);
      if (range && state.checkpointId < range.from) break; // newest first: the rest are older still
      states.push(state);
    }
    return states.reverse();
  }

  /** One checkpoint's state, or null when the thread has no such checkpoint; never calls the model. */
  async readCheckpoint(conversationId: string, checkpointId: string): Promise<CheckpointState | null> {
    const config = threadConfig(conversationId);
    const snapshot = await this.#reader.getState({ configurable: { ...config.configurable, checkpoint_id: checkpointId } });
    // A missing checkpoint comes back as an empty snapshot without a creation time.
    return snapshot.createdAt === undefined ? null : checkpointState(snapshot);
  }

  async deleteThread(conversationId: string): Promise<void> {
    await this.options.checkpointer.deleteThread(conversationId);
  }
}

function checkpointState(snapshot: StateSnapshot): CheckpointState {
  return {
    checkpointId: String(snapshot.config?.configurable?.checkpoint_id),
    messages: ((snapshot.values as { messages?: BaseMessage[] } | undefined)?.messages ?? []) as BaseMessage[],
    next: [...(snapshot.next ?? [])],
    tasks: (snapshot.tasks ?? []).map((task) => ({ id: task.id, name: task.name })),
  };
}

export function messageText(message: BaseMessage): string {
  const content = message.content;
  if (typeof content === "string") return content;
  return content
    .map((part) => (typeof part === "string" ? part : part.type === "text" && typeof part.text === "string" ? part.text : ""))
    .join("");
}

