// Answers to what a WAITING thread asks. The built-in agent's tool approvals
// ({"type": "tool_approval", "toolCalls": [{id, name, args}]}) get one decision
// per call (approve, reject with an optional reason, or edit the arguments); a
// tool call in doubt ({"type": "tool_in_doubt", toolCallId, tool, args,
// startedAt, attempt}: cut off by a crash, it may have run) gets retry, skip or
// fail, with an optional result for the model; any other interrupt's value is a custom graph's own question, answered with
// JSON the user types. What the console can check (JSON syntax, arguments
// being an object, a decision for every call) it checks before sending; the
// API checks the rest and says what is wrong.
// The kinds are read by the client SDK (toPendingInterrupt), and the answers
// are its types (ToolApprovalAnswer, ToolInDoubtAnswer).
import { toPendingInterrupt, type JsonValue, type ToolDecision, type ToolInDoubtAnswer, type ToolInDoubtRequest } from "@runledger/client";
import type { Interrupt } from "../api/types.ts";

export interface ApprovalCall {
  id: string;
  name: string;
  args: unknown;
}

function kindOf(value: unknown) {
  return toPendingInterrupt({ id: "", node: "", value: (value ?? null) as JsonValue });
}

/** The calls of a tool approval, or null for any other question. */
export function approvalCalls(value: unknown): ApprovalCall[] | null {
  const question = kindOf(value);
  if (question.kind !== "tool_approval") return null;
  return question.value.toolCalls.flatMap((call: unknown) => {
    const { id, name, args } = (call ?? {}) as { id?: unknown; name?: unknown; args?: unknown };
    return typeof id === "string" ? [{ id, name: typeof name === "string" ? name : "tool", args }] : [];
  });
}

export type InDoubtCall = Omit<ToolInDoubtRequest, "type">;

/** The call a tool_in_doubt interrupt asks about, or null for any other question. */
export function inDoubtCall(value: unknown): InDoubtCall | null {
  const question = kindOf(value);
  if (question.kind !== "tool_in_doubt") return null;
  const { type: _type, ...call } = question.value;
  return call;
}

export type DoubtDecision = "retry" | "skip" | "fail";

export interface DoubtDraft {
  /** Null until the user decides: nothing runs again by default. */
  decision: DoubtDecision | null;
  /** What the model reads as the call's result (skip and fail); empty for the default text. */
  result: string;
}

export type Decision = "approve" | "reject" | "edit";

export interface CallDraft {
  /** Null until the user decides: no call is approved by default. */
  decision: Decision | null;
  reason: string;
  /** The edited arguments as typed (JSON). */
  argsText: string;
}

export interface InterruptDraft {
  calls: Record<string, CallDraft>;
  /** The decision on a tool call in doubt. */
  doubt: DoubtDraft;
  /** The whole answer typed as JSON: always for a custom graph's question, on request for a tool approval. */
  raw: boolean;
  text: string;
}

export function initialDraft(interrupt: Interrupt): InterruptDraft {
  const calls = approvalCalls(interrupt.value);
  const drafts: Record<string, CallDraft> = {};
  for (const call of calls ?? []) drafts[call.id] = { decision: null, reason: "", argsText: JSON.stringify(call.args ?? {}, null, 2) };
  return { calls: drafts, doubt: { decision: null, result: "" }, raw: calls === null && inDoubtCall(interrupt.value) === null, text: "" };
}

export type Checked<T> = { ok: true; value: T } | { ok: false; problem: string };

export function parseJson(text: string): Checked<unknown> {
  if (!text.trim()) return { ok: false, problem: "type a JSON value" };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, problem: `not JSON: ${(error as Error).message}` };
  }
}

/** Edited arguments: a JSON object, as a tool's arguments are. */
export function parseArgs(text: string): Checked<Record<string, unknown>> {
  const parsed = parseJson(text);
  if (!parsed.ok) return parsed;
  const value = parsed.value;
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { ok: false, problem: "the arguments must be a JSON object" };
  return { ok: true, value: value as Record<string, unknown> };
}

function callAnswer(id: string, draft: CallDraft): Checked<ToolDecision> {
  switch (draft.decision) {
    case "approve":
      return { ok: true, value: { id, decision: "approve" } };
    case "reject": {
      const reason = draft.reason.trim();
      return { ok: true, value: reason ? { id, decision: "reject", reason } : { id, decision: "reject" } };
    }
    case "edit": {
      const args = parseArgs(draft.argsText);
      return args.ok ? { ok: true, value: { id, decision: "edit", args: args.value as { [key: string]: JsonValue } } } : args;
    }
    default:
      return { ok: false, problem: "approve, reject or edit it" };
  }
}

function doubtAnswer(draft: DoubtDraft): Checked<ToolInDoubtAnswer> {
  if (draft.decision === null) return { ok: false, problem: "retry, skip or fail it" };
  const result = draft.result.trim();
  if (draft.decision === "retry") return { ok: true, value: { decision: "retry" } };
  return { ok: true, value: result ? { decision: draft.decision, result } : { decision: draft.decision } };
}

/** The answer the draft sends for the interrupt, or what keeps it from being sent. */
export function draftAnswer(interrupt: Interrupt, draft: InterruptDraft): Checked<unknown> {
  if (draft.raw) return parseJson(draft.text);
  const doubt = inDoubtCall(interrupt.value);
  if (doubt) {
    const answer = doubtAnswer(draft.doubt);
    return answer.ok ? answer : { ok: false, problem: `${doubt.tool}: ${answer.problem}` };
  }
  const calls = approvalCalls(interrupt.value) ?? [];
  const answers: ToolDecision[] = [];
  for (const call of calls) {
    const answer = callAnswer(call.id, draft.calls[call.id] ?? { decision: null, reason: "", argsText: "" });
    if (!answer.ok) return { ok: false, problem: `${call.name}: ${answer.problem}` };
    answers.push(answer.value);
  }
  return { ok: true, value: { toolCalls: answers } };
}

/** The form's answer so far as JSON to edit by hand: the calls decided (and well-formed) so far. */
export function draftAsJson(interrupt: Interrupt, draft: InterruptDraft): string {
  const calls = approvalCalls(interrupt.value) ?? [];
  const answers = calls.flatMap((call) => {
    const answer = callAnswer(call.id, draft.calls[call.id] ?? { decision: null, reason: "", argsText: "" });
    return answer.ok ? [answer.value] : [];
  });
  return JSON.stringify({ toolCalls: answers }, null, 2);
}

/** How a person decided on one call of an answered tool approval. */
export interface CallOutcome {
  decision: string;
  reason?: string;
  args?: unknown;
}

/** Each call's decision in an interrupt's recorded answer, by call id. */
export function decisionsOf(interrupt: Interrupt): Map<string, CallOutcome> {
  const decisions = new Map<string, CallOutcome>();
  const toolCalls = (interrupt.answer as { toolCalls?: unknown } | null)?.toolCalls;
  if (!Array.isArray(toolCalls)) return decisions;
  for (const entry of toolCalls as { id?: unknown; decision?: unknown; reason?: unknown; args?: unknown }[]) {
    if (typeof entry?.id !== "string" || typeof entry.decision !== "string") continue;
    decisions.set(entry.id, { decision: entry.decision, reason: typeof entry.reason === "string" ? entry.reason : undefined, args: entry.args });
  }
  return decisions;
}

/** Where each tool call stands with respect to approval: waiting, or decided (and how). */
export type CallApproval = { state: "waiting" } | { state: "decided"; outcome: CallOutcome; byRun: string | null } | { state: "superseded" };

export function callApprovals(interrupts: readonly Interrupt[], pendingIds: ReadonlySet<string>): Map<string, CallApproval> {
  const approvals = new Map<string, CallApproval>();
  for (const interrupt of interrupts) {
    const calls = approvalCalls(interrupt.value);
    if (!calls) continue;
    const decisions = decisionsOf(interrupt);
    for (const call of calls) {
      const outcome = decisions.get(call.id);
      if (pendingIds.has(interrupt.id)) approvals.set(call.id, { state: "waiting" });
      else if (outcome) approvals.set(call.id, { state: "decided", outcome, byRun: interrupt.answeredBy?.id ?? null });
      else if (interrupt.state === "SUPERSEDED") approvals.set(call.id, { state: "superseded" });
    }
  }
  return approvals;
}
