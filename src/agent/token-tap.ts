// Hands a run the tokens of its graph's model calls as the model streams them.
// LangGraph's "messages" stream mode does the same through the graph's output
// stream, where every item, one per token, also pays for a callback manager
// built around the stream's next() (@langchain/core's AsyncGeneratorWithSetup);
// taken here, in the model's own callback, a relayed token costs less CPU
// (bench/analysis.md).
//
// What counts as a token, and the message id it carries, are LangGraph's
// StreamMessagesHandler's (pregel/messages.ts, not exported), kept here rule for
// rule, message ids written back into the messages included, so the thread
// stores the same ids either way:
// - a model call made inside a graph node (its metadata names a checkpoint
//   namespace) streams its chunks, unless tagged "nostream" or
//   "langsmith:nostream"; every chunk of a call gets one id, the model's own or
//   "run-<callback run id>";
// - a call that did not stream gives its whole message at its end;
// - when a node ends, the messages it returns that were neither streamed nor
//   among its inputs are given whole ("run-<node run id>-out-<i>" when unnamed).
// Of these, runledger relays AI message chunks with text, as it did from the
// "messages" mode.
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import {
  AIMessageChunk,
  isAIMessageChunk,
  isBaseMessage,
  isBaseMessageChunk,
  isToolMessage,
  type BaseMessage,
  type BaseMessageChunk,
} from "@langchain/core/messages";
import type { LLMResult } from "@langchain/core/outputs";
import { isCommand } from "@langchain/langgraph";

/** Where a run's tokens go (the run's hooks). */
export interface TokenSink {
  onToken(text: string, messageId: string, node: string): void;
}

interface Tracked {
  node: string;
  /** Model calls: the id the call's tokens carry, fixed by its first token. */
  messageId?: string;
  streamed: boolean;
}

export class TokenTap extends BaseCallbackHandler {
  name = "token-tap";
  /** Makes a chat model stream even when invoked, as LangGraph's own handler does. */
  lc_prefer_streaming = true;
  /** Model calls and node runs being watched, by callback run id. */
  readonly #runs = new Map<string, Tracked>();
  /** Ids of the messages already given (or a node's inputs): a node's output repeats them. */
  readonly #seen = new Set<string>();

  constructor(private readonly sink: TokenSink) {
    // Called inline, not queued behind every other handler's work: a token is relayed as it arrives.
    super({ _awaitHandler: true });
  }

  override handleChatModelStart(
    _llm: unknown,
    _messages: unknown,
    runId: string,
    _parentRunId?: string,
    _extraParams?: unknown,
    tags?: string[],
    metadata?: Record<string, unknown>,
  ): void {
    if (tags?.includes("nostream") || tags?.includes("langsmith:nostream")) return;
    const node = nodeOf(metadata);
    if (node !== undefined) this.#runs.set(runId, { node, streamed: false });
  }

  override handleLLMNewToken(token: string, _idx: unknown, runId: string, _parentRunId?: string, _tags?: string[], fields?: { chunk?: unknown }): void {
    const call = this.#runs.get(runId);
    if (!call) return;
    call.streamed = true;
    const message = (fields?.chunk as { message?: unknown } | undefined)?.message;
    this.#callMessage(call, runId, isBaseMessage(message) ? message : new AIMessageChunk({ content: token }));
  }

  override handleLLMEnd(output: LLMResult, runId: string): void {
    const call = this.#runs.get(runId);
    this.#runs.delete(runId);
    if (!call || call.streamed) return;
    const message = (output.generations?.[0]?.[0] as { message?: unknown } | undefined)?.message;
    if (isBaseMessage(message) && !(message.id !== undefined && this.#seen.has(message.id))) this.#callMessage(call, runId, message);
  }

  override handleLLMError(_error: unknown, runId: string): void {
    this.#runs.delete(runId);
  }

  // LangChain passes the parent run id fourth and the run's name eighth, whatever its declared types say.
  override handleChainStart(
    _chain: unknown,
    inputs: unknown,
    runId: string,
    _parentRunId?: string,
    tags?: unknown,
    metadata?: unknown,
    _runType?: unknown,
    name?: unknown,
  ): void {
    const meta = metadata as Record<string, unknown> | undefined;
    if (meta === undefined || name !== meta.langgraph_node || (tags as string[] | undefined)?.includes("langsmith:hidden")) return;
    const node = nodeOf(meta);
    if (node !== undefined) this.#runs.set(runId, { node, streamed: false });
    if (inputs && typeof inputs === "object") {
      for (const value of Object.values(inputs)) for (const item of [value].flat()) if (isMessage(item) && item.id !== undefined) this.#seen.add(item.id);
    }
  }

  override handleChainEnd(outputs: unknown, runId: string): void {
    const run = this.#runs.get(runId);
    this.#runs.delete(runId);
    if (!run) return;
    let index = 0;
    const give = (value: unknown) => {
      if (!isBaseMessage(value)) return;
      if (value.id === undefined || !this.#seen.has(value.id)) {
        let id = value.id;
        if (isToolMessage(value)) id ??= `run-${runId}-tool-${value.tool_call_id}`;
        else id ??= `run-${runId}-out-${index}`;
        this.#keep(value, id);
        if (isAIMessageChunk(value as BaseMessageChunk)) this.#give(run.node, messageText(value), id);
      }
      index += 1;
    };
    const walk = (output: unknown): void => {
      if (isCommand(output)) walk(output.update);
      else if (isBaseMessage(output)) give(output);
      else if (Array.isArray(output)) {
        const commands = output.some(isCommand);
        for (const value of output)
          if (commands) walk(value);
          else give(value);
      } else if (output !== null && typeof output === "object") {
        for (const value of Object.values(output))
          if (Array.isArray(value)) walk(value);
          else give(value);
      }
    };
    walk(outputs);
  }

  override handleChainError(_error: unknown, runId: string): void {
    this.#runs.delete(runId);
  }

  /** A model call's message: its id made the call's one id, then given if it is an AI chunk with text. */
  #callMessage(call: Tracked, runId: string, message: BaseMessage): void {
    const fallback = `run-${runId}`;
    let id = message.id;
    if (id == null || id === fallback) id = call.messageId ?? id ?? fallback;
    call.messageId ??= id;
    this.#keep(message, id);
    if (isAIMessageChunk(message as BaseMessageChunk)) this.#give(call.node, messageText(message), id);
  }

  /** Writes the id into the message, as LangGraph's handler does (the thread stores it), and remembers it. */
  #keep(message: BaseMessage, id: string): void {
    if (message.id !== id) {
      message.id = id;
      (message.lc_kwargs as { id?: string }).id = id;
    }
    this.#seen.add(id);
  }

  #give(node: string, text: string, messageId: string): void {
    if (text) this.sink.onToken(text, messageId, node);
  }
}

/** The graph node a callback's metadata names, when it runs inside a graph (has a checkpoint namespace). */
function nodeOf(metadata: Record<string, unknown> | undefined): string | undefined {
  if (!metadata || !(metadata.langgraph_checkpoint_ns ?? metadata.checkpoint_ns)) return undefined;
  return typeof metadata.langgraph_node === "string" ? metadata.langgraph_node : "";
}

function isMessage(value: unknown): value is BaseMessage {
  return isBaseMessage(value) || isBaseMessageChunk(value);
}

/** A message's text: its string content, or its text parts joined. */
export function messageText(message: BaseMessage): string {
  const content = message.content;
  if (typeof content === "string") return content;
  return content.map((part) => (typeof part === "string" ? part : part.type === "text" && typeof part.text === "string" ? part.text : "")).join("");
}
