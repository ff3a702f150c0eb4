// The built-in tool-calling agent, compiled once per agent: START → agent; agent
// → tools when the model asked for tools (→ approve first when one of them needs
// a person's approval), else END; tools → agent.
//
// A run's model and tools come through its config (`configurable.model`,
// `configurable.tools`), not the compiled graph, so one compiled graph serves
// every run. Each tool call is a task of its own (Send): LangGraph stores a
// finished task's result at once, so a run that fails or stops after some
// calls finished re-runs only the others when resumed. A call cut off before
// its result was stored is guarded by the run's journal
// (`configurable.journal`, tool-journal.ts): it is never repeated silently.
// The approve node raises its interrupt before anything else happens, so
// re-running it from the top on resume is safe.
import { AIMessage, SystemMessage, ToolMessage, isAIMessage, isToolMessage, type BaseMessage } from "@langchain/core/messages";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { StructuredToolInterface } from "@langchain/core/tools";
import { END, MessagesAnnotation, START, Send, StateGraph, interrupt, type BaseCheckpointSaver, type LangGraphRunnableConfig } from "@langchain/langgraph";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { z } from "zod";
import { journaledCall, type RunJournal } from "./tool-journal.ts";

export const AGENT_NODE = "agent";
export const APPROVE_NODE = "approve";
export const TOOLS_NODE = "tools";

/** The interrupt the approve node raises: the calls waiting for a person. */
export interface ToolApprovalRequest {
  type: "tool_approval";
  toolCalls: { id: string; name: string; args: Record<string, unknown> }[];
}

/** The answer to a ToolApprovalRequest: one decision per call. */
export const ToolApprovalAnswer = z
  .object({
    toolCalls: z
      .array(
        z.discriminatedUnion("decision", [
          z.object({ id: z.string(), decision: z.literal("approve") }).strict(),
          z.object({ id: z.string(), decision: z.literal("reject"), reason: z.string().max(10_000).optional() }).strict(),
          z.object({ id: z.string(), decision: z.literal("edit"), args: z.record(z.string(), z.unknown()) }).strict(),
        ]),
      )
      .min(1),
  })
  .strict();
export type ToolApprovalAnswer = z.infer<typeof ToolApprovalAnswer>;

/** What the model sees as the result of a call a person rejected without saying why. */
export const REJECTED_WITHOUT_REASON = "A person reviewing this tool call rejected it.";

export function isToolApprovalRequest(value: unknown): value is ToolApprovalRequest {
  return (value as { type?: unknown } | null)?.type === "tool_approval" && Array.isArray((value as { toolCalls?: unknown }).toolCalls);
}

/**
 * Checks an answer against the request it answers: valid JSON of the right
 * shape, exactly one decision for each call asked about. Returns a message
 * saying what is wrong, or null.
 */
export function approvalAnswerProblem(request: ToolApprovalRequest, answer: unknown): string | null {
  const parsed = ToolApprovalAnswer.safeParse(answer);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return `the answer to a tool approval must be {"toolCalls": [{"id", "decision": "approve" | "reject" (with an optional "reason") | "edit" (with "args")}]}: ${issue.path.join(".") || "value"}: ${issue.message}`;
  }
  const asked = new Set(request.toolCalls.map((c) => c.id));
  const answered = parsed.data.toolCalls.map((c) => c.id);
  const unknown = answered.find((id) => !asked.has(id));
  if (unknown !== undefined) return `tool call ${JSON.stringify(unknown)} is not one the approval asks about`;
  if (new Set(answered).size !== answered.length) return "a tool call is answered twice";
  const missing = [...asked].find((id) => !answered.includes(id));
  if (missing !== undefined) return `tool call ${JSON.stringify(missing)} has no decision`;
  return null;
}

/** What the graph needs from a run, in `config.configurable`. */
interface RunResources {
  model: BaseChatModel;
  tools: StructuredToolInterface[];
}

function resources(config: LangGraphRunnableConfig): RunResources {
  const model = config.configurable?.model as BaseChatModel | undefined;
  if (!model) throw new Error("no chat model in config.configurable.model");
  return { model, tools: (config.configurable?.tools as StructuredToolInterface[] | undefined) ?? [] };
}

type Call = ToolApprovalRequest["toolCalls"][number];

/** The tool calls of the thread's last AI message that have no result yet, and that message's index. */
function unansweredCalls(messages: BaseMessage[]): { calls: Call[]; at: number } {
  const at = messages.findLastIndex((m) => isAIMessage(m));
  if (at < 0) return { calls: [], at };
  const answered = new Set(
    messages
      .slice(at + 1)
      .filter((m) => isToolMessage(m))
      .map((m) => (m as ToolMessage).tool_call_id),
  );
  const calls = ((messages[at] as AIMessage).tool_calls ?? [])
    .filter((c) => c.id !== undefined && !answered.has(c.id))
    .map((c) => ({ id: c.id!, name: c.name, args: (c.args ?? {}) as Record<string, unknown> }));
  return { calls, at };
}

export interface ChatGraphSpec {
  systemPrompt: string;
  /** Tool names whose calls wait for a person's approval. */
  requireApproval: readonly string[];
  checkpointer: BaseCheckpointSaver;
}

export function buildChatGraph({ systemPrompt, requireApproval, checkpointer }: ChatGraphSpec) {
  const needsApproval = new Set(requireApproval);

  async function agent(state: typeof MessagesAnnotation.State, config: LangGraphRunnableConfig) {
    const { model, tools } = resources(config);
    const bound = tools.length ? model.bindTools!(tools) : model;
    // The system prompt goes to every call and is never written to the thread.
    const reply = await bound.invoke(systemPrompt ? [new SystemMessage(systemPrompt), ...state.messages] : state.messages, config);
    return { messages: [reply] };
  }

  function toTools(messages: BaseMessage[]) {
    return unansweredCalls(messages).calls.map((call) => new Send(TOOLS_NODE, { messages, call }));
  }

  function afterAgent(state: typeof MessagesAnnotation.State) {
    const { calls } = unansweredCalls(state.messages);
    if (calls.length === 0) return END;
    if (calls.some((c) => needsApproval.has(c.name))) return APPROVE_NODE;
    return toTools(state.messages);
  }

  async function approve(state: typeof MessagesAnnotation.State) {
    const { calls, at } = unansweredCalls(state.messages);
    const request: ToolApprovalRequest = { type: "tool_approval", toolCalls: calls.filter((c) => needsApproval.has(c.name)) };
    const answer = interrupt(request);
    const problem = approvalAnswerProblem(request, answer);
    // The API checks answers before resuming; this guards a graph driven some other way.
    if (problem) throw new Error(problem);
    const decisions = ToolApprovalAnswer.parse(answer).toolCalls;
    const asked = state.messages[at] as AIMessage;
    const edits = new Map(decisions.flatMap((d) => (d.decision === "edit" ? [[d.id, d.args] as const] : [])));
    const updates: BaseMessage[] = [];
    if (edits.size) {
      // Same id: the messages reducer replaces the model's message with the edited one, in place.
      updates.push(
        new AIMessage({
          id: asked.id,
          content: asked.content,
          tool_calls: (asked.tool_calls ?? []).map((c) => (c.id && edits.has(c.id) ? { ...c, args: edits.get(c.id)! } : c)),
        }),
      );
    }
    for (const d of decisions) {
      if (d.decision !== "reject") continue;
      const call = request.toolCalls.find((c) => c.id === d.id)!;
      updates.push(new ToolMessage({ tool_call_id: d.id, name: call.name, content: d.reason ?? REJECTED_WITHOUT_REASON, status: "error" }));
    }
    return { messages: updates };
  }

  function afterApprove(state: typeof MessagesAnnotation.State) {
    const sends = toTools(state.messages);
    // Every call rejected: the model hears why and answers.
    return sends.length ? sends : AGENT_NODE;
  }

  async function tools(input: { messages: BaseMessage[]; call: Call }, config: LangGraphRunnableConfig) {
    const node = new ToolNode(resources(config).tools, { handleToolErrors: true });
    const only = new AIMessage({ content: "", tool_calls: [{ ...input.call, type: "tool_call" }] });
    const journal = config.configurable?.journal as RunJournal | undefined;
    if (!journal) return node.invoke({ messages: [only] }, config);
    const message = await journaledCall(journal, input.call, config.signal, async () => {
      const output = (await node.invoke({ messages: [only] }, config)) as { messages?: BaseMessage[] };
      const [reply] = output.messages ?? [];
      if (!reply || !isToolMessage(reply)) throw new Error(`tool ${input.call.name} answered with something other than a tool message`);
      return reply as ToolMessage;
    });
    return { messages: [message] };
  }

  return new StateGraph(MessagesAnnotation)
    .addNode(AGENT_NODE, agent)
    .addNode(APPROVE_NODE, approve)
    .addNode(TOOLS_NODE, tools)
    .addEdge(START, AGENT_NODE)
    .addConditionalEdges(AGENT_NODE, afterAgent, [APPROVE_NODE, TOOLS_NODE, END])
    .addConditionalEdges(APPROVE_NODE, afterApprove, [TOOLS_NODE, AGENT_NODE])
    .addEdge(TOOLS_NODE, AGENT_NODE)
    .compile({ checkpointer });
}

export type ChatGraph = ReturnType<typeof buildChatGraph>;
