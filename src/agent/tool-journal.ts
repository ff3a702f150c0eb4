// Tool calls that may have run are never repeated silently (docs/tools-and-crashes.md).
//
// Each call of the built-in agent is journaled: an attempt is recorded before
// the tool is invoked and its outcome after it returns. LangGraph re-executes a
// step whose writes were not saved, so after a crash, a lease expiry, a
// shutdown or a cancel the tools step runs again; here it first asks the
// journal:
// - an outcome is recorded: the call is not invoked; the recorded result is
//   given to the model, even if no checkpoint ever saw it;
// - an attempt started and has no outcome: the call is in doubt. A tool that
//   is idempotent (its annotations, or the agent's `idempotentTools` /
//   `retryInDoubt`) is invoked again as the next attempt; any other raises a
//   `tool_in_doubt` interrupt before anything runs, and a person answers
//   retry, skip or fail.
import { ToolMessage } from "@langchain/core/messages";
import type { StructuredToolInterface } from "@langchain/core/tools";
import { interrupt } from "@langchain/langgraph";
import { z } from "zod";
import { OUTCOME_STATES, type ToolCallRecord, type ToolJournal } from "../storage/tool-journal/types.ts";

/** The interrupt a call in doubt raises. */
export interface ToolInDoubtRequest {
  type: "tool_in_doubt";
  toolCallId: string;
  tool: string;
  args: Record<string, unknown>;
  /** When the attempt that was cut off started (ISO 8601). */
  startedAt: string;
  /** Which attempt was cut off: 1 for the first. */
  attempt: number;
}

const RESULT_MAX_CHARS = 100_000;

/** The answer to a ToolInDoubtRequest. */
export const ToolInDoubtAnswer = z.discriminatedUnion("decision", [
  z.object({ decision: z.literal("retry") }).strict(),
  z.object({ decision: z.literal("skip"), result: z.string().max(RESULT_MAX_CHARS).optional() }).strict(),
  z.object({ decision: z.literal("fail"), result: z.string().max(RESULT_MAX_CHARS).optional() }).strict(),
]);
export type ToolInDoubtAnswer = z.infer<typeof ToolInDoubtAnswer>;

/** What the model hears for a call skipped without a result. */
export const SKIPPED_WITHOUT_RESULT = "This tool call was cut off and may or may not have taken effect; a person chose not to run it again.";
/** What the model hears for a call a person failed without saying why. */
export const FAILED_WITHOUT_RESULT = "This tool call was cut off before it reported a result, and a person marked it as failed.";

export function isToolInDoubtRequest(value: unknown): value is ToolInDoubtRequest {
  return (value as { type?: unknown } | null)?.type === "tool_in_doubt" && typeof (value as { toolCallId?: unknown }).toolCallId === "string";
}

/** A message saying what is wrong with an answer to a tool_in_doubt interrupt, or null. */
export function inDoubtAnswerProblem(answer: unknown): string | null {
  const parsed = ToolInDoubtAnswer.safeParse(answer);
  if (parsed.success) return null;
  const issue = parsed.error.issues[0]!;
  return `the answer to a tool in doubt must be {"decision": "retry" | "skip" | "fail", "result"?: string (for skip and fail)}: ${issue.path.join(".") || "value"}: ${issue.message}`;
}

/** Which tools may run again when in doubt: the agent's `idempotentTools` and `retryInDoubt`. */
export interface RetryPolicy {
  idempotentTools: readonly string[];
  retryInDoubt: boolean;
}

export const NO_RETRY_POLICY: RetryPolicy = { idempotentTools: [], retryInDoubt: false };

/**
 * Whether a call of this tool that may have run can simply run again: declared
 * so by the agent, or by the tool itself with MCP's annotations (idempotentHint
 * or readOnlyHint; the built-in tools carry the same annotations).
 */
export function isIdempotent(tool: StructuredToolInterface | undefined, name: string, policy: RetryPolicy): boolean {
  if (policy.retryInDoubt || policy.idempotentTools.includes(name)) return true;
  const annotations = (
    (tool as { metadata?: unknown } | undefined)?.metadata as { annotations?: { idempotentHint?: unknown; readOnlyHint?: unknown } } | undefined
  )?.annotations;
  return annotations?.idempotentHint === true || annotations?.readOnlyHint === true;
}

/** The journal as one run's tools step uses it: bound to the run, its conversation and its tools. */
export interface RunJournal {
  store: ToolJournal;
  conversationId: string;
  runId: string;
  idempotent(name: string): boolean;
  now(): Date;
  /** An attempt is about to be invoked, or a recorded one answers for the call. */
  onAttempt(call: { id: string; name: string; args: Record<string, unknown> }, attempt: number, invoked: boolean): void;
}

type Call = { id: string; name: string; args: Record<string, unknown> };

function messageFrom(record: ToolCallRecord, call: Call): ToolMessage {
  return new ToolMessage({
    tool_call_id: call.id,
    name: call.name,
    content: (record.result ?? "") as string,
    status: record.state === "failed" ? "error" : "success",
  });
}

/**
 * Runs one tool call under the journal: `invoke` is called only when no attempt
 * of the call could have taken effect unseen, or when retrying it is allowed.
 */
export async function journaledCall(
  journal: RunJournal,
  call: Call,
  signal: AbortSignal | undefined,
  invoke: () => Promise<ToolMessage>,
): Promise<ToolMessage> {
  const { store, conversationId } = journal;
  const latest = await store.latest(conversationId, call.id);
  let attempt = 1;
  if (latest) {
    const key = { conversationId, toolCallId: call.id, attempt: latest.attempt };
    if (OUTCOME_STATES.has(latest.state)) {
      journal.onAttempt(call, latest.attempt, false);
      return messageFrom(latest, call);
    }
    // Started and never finished: whatever was cut off may have taken effect.
    const inDoubt = latest.state === "started" ? ((await store.markInDoubt(key)) ?? latest) : latest;
    if (!journal.idempotent(call.name)) {
      // Raised before anything runs, so re-running this node from the top on resume is safe.
      const answer = interrupt<ToolInDoubtRequest, unknown>({
        type: "tool_in_doubt",
        toolCallId: call.id,
        tool: call.name,
        args: call.args,
        startedAt: inDoubt.startedAt.toISOString(),
        attempt: inDoubt.attempt,
      });
      const problem = inDoubtAnswerProblem(answer);
      // The API checks answers before resuming; this guards a graph driven some other way.
      if (problem) throw new Error(problem);
      const decision = ToolInDoubtAnswer.parse(answer);
      if (decision.decision !== "retry") {
        const skipped = decision.decision === "skip";
        const result = decision.result ?? (skipped ? SKIPPED_WITHOUT_RESULT : FAILED_WITHOUT_RESULT);
        const recorded =
          (await store.finish(key, { state: skipped ? "skipped" : "failed", result, finishedAt: journal.now() })) ??
          (await store.latest(conversationId, call.id))!;
        journal.onAttempt(call, recorded.attempt, false);
        return messageFrom(recorded, call);
      }
    }
    attempt = latest.attempt + 1;
  }
  await store.start({ conversationId, toolCallId: call.id, attempt, runId: journal.runId, name: call.name, args: call.args, startedAt: journal.now() });
  journal.onAttempt(call, attempt, true);
  const message = await invoke();
  // A call stopped by the run's cancel or shutdown may have reached the tool: it stays in doubt, with no outcome.
  if (signal?.aborted && message.status === "error") throw signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason));
  const content = message.content;
  await store.finish(
    { conversationId, toolCallId: call.id, attempt },
    { state: message.status === "error" ? "failed" : "succeeded", result: content, finishedAt: journal.now() },
  );
  return message;
}
