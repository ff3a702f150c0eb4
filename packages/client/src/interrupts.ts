// What a waiting run asks (Interrupt.value), typed for the two kinds runledger
// itself raises, and open for a graph's own; and the answers each takes
// (resumeRun's responses).
import type { JsonValue } from "./generated.js";

/** The built-in agent asks before it runs a tool listed in `requireApproval`. */
export type ToolApprovalRequest = {
  type: "tool_approval";
  toolCalls: { id: string; name: string; args: JsonValue }[];
};

/** A tool call that may or may not have run (cut off by a crash, a cancel or a shutdown) waits for a person's decision. */
export type ToolInDoubtRequest = {
  type: "tool_in_doubt";
  toolCallId: string;
  tool: string;
  args: JsonValue;
  startedAt: string | null;
  attempt: number;
};

interface InterruptBase {
  /** LangGraph's interrupt id: respond() names it. */
  id: string;
  /** The graph node that asked. */
  node: string;
  /** The run that asked, when known. */
  runId: string | null;
}

export type PendingInterrupt =
  | (InterruptBase & { kind: "tool_approval"; value: ToolApprovalRequest })
  | (InterruptBase & { kind: "tool_in_doubt"; value: ToolInDoubtRequest })
  /** A graph's own interrupt(value): its value as it gave it. */
  | (InterruptBase & { kind: "custom"; value: JsonValue });

/** One call's decision: approve it, reject it (the reason is what the model reads as the tool's result), or run it with other arguments. */
export type ToolDecision =
  | { id: string; decision: "approve" }
  | { id: string; decision: "reject"; reason?: string }
  | { id: string; decision: "edit"; args: { [key: string]: JsonValue } };

/** The answer to a tool approval: a decision for every call it lists. */
export type ToolApprovalAnswer = { toolCalls: ToolDecision[] };

/** The answer to a tool call in doubt: run it again, or skip or fail it (`result` is what the model reads). */
export type ToolInDoubtAnswer = { decision: "retry" } | { decision: "skip" | "fail"; result?: string };

/** The answer an interrupt of this kind takes: typed for the built-in kinds, any JSON for a graph's own. */
export type AnswerTo<I extends PendingInterrupt> = I extends { kind: "tool_approval" }
  ? ToolApprovalAnswer
  : I extends { kind: "tool_in_doubt" }
    ? ToolInDoubtAnswer
    : JsonValue;

export type InterruptAnswer = ToolApprovalAnswer | ToolInDoubtAnswer | JsonValue;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Reads an Interrupt as the API gives it into its kind. */
export function toPendingInterrupt(raw: { id: string; node: string; value: JsonValue | null; run?: { id: string } | null }): PendingInterrupt {
  const base = { id: raw.id, node: raw.node, runId: raw.run?.id ?? null };
  const value = raw.value;
  if (isObject(value) && value.type === "tool_approval" && Array.isArray(value.toolCalls)) {
    return { ...base, kind: "tool_approval", value: value as unknown as ToolApprovalRequest };
  }
  if (isObject(value) && value.type === "tool_in_doubt" && typeof value.toolCallId === "string") {
    const request: ToolInDoubtRequest = {
      type: "tool_in_doubt",
      toolCallId: value.toolCallId,
      tool: typeof value.tool === "string" ? value.tool : "tool",
      args: (value.args ?? null) as JsonValue,
      startedAt: typeof value.startedAt === "string" ? value.startedAt : null,
      attempt: typeof value.attempt === "number" ? value.attempt : 1,
    };
    return { ...base, kind: "tool_in_doubt", value: request };
  }
  return { ...base, kind: "custom", value: value ?? null };
}
