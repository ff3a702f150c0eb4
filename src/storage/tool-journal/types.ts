// The tool journal seam: the `tool_calls` table. Every attempt at a tool call is
// recorded before the tool is invoked and again with its outcome, so that after
// a crash, a lease expiry, a shutdown or a cancel runledger knows which calls may
// have run without anyone hearing how they ended (docs/tools-and-crashes.md).

/**
 * - started: invoked, no outcome recorded (yet)
 * - succeeded, failed: the tool answered (a failure is an answer too)
 * - in_doubt: found started by a later run: it may or may not have run
 * - skipped: in doubt, and a person said not to run it again (with a result for the model)
 */
export type ToolCallState = "started" | "succeeded" | "failed" | "in_doubt" | "skipped";

export const TOOL_CALL_STATES: readonly ToolCallState[] = ["started", "succeeded", "failed", "in_doubt", "skipped"];

/** States that are an outcome: a call in one of them is never invoked again. */
export const OUTCOME_STATES: ReadonlySet<ToolCallState> = new Set(["succeeded", "failed", "skipped"]);

export interface ToolCallRecord {
  conversationId: string;
  /** The model's id for the call. */
  toolCallId: string;
  /** 1, 2, ...: each invocation of the same call is an attempt of its own. */
  attempt: number;
  /** The run that made the attempt. */
  runId: string;
  name: string;
  args: unknown;
  state: ToolCallState;
  /** The content the model was given (a string, or content blocks); null without an outcome. */
  result: unknown;
  startedAt: Date;
  finishedAt: Date | null;
}

export type NewToolCall = Pick<ToolCallRecord, "conversationId" | "toolCallId" | "attempt" | "runId" | "name" | "args" | "startedAt">;

export interface ToolCallKey {
  conversationId: string;
  toolCallId: string;
  attempt: number;
}

export interface ToolCallOutcome {
  state: "succeeded" | "failed" | "skipped";
  result: unknown;
  finishedAt: Date;
}

export interface ToolJournal {
  /** Records an attempt as started; an attempt already recorded is refused (the primary key). */
  start(call: NewToolCall): Promise<ToolCallRecord>;
  /**
   * Records the attempt's outcome, if it has none yet (started or in doubt);
   * answers the record, or null when there is no such attempt or it already had
   * an outcome (which is kept: an outcome is never overwritten).
   */
  finish(key: ToolCallKey, outcome: ToolCallOutcome): Promise<ToolCallRecord | null>;
  /** Marks a started attempt in doubt; answers the record as it now is (null for an unknown attempt). */
  markInDoubt(key: ToolCallKey): Promise<ToolCallRecord | null>;
  /** The latest attempt at a call of the conversation, or null when it was never invoked. */
  latest(conversationId: string, toolCallId: string): Promise<ToolCallRecord | null>;
  /** The attempts each run made, oldest first; every id asked for is a key (an empty list for none). */
  byRuns(runIds: readonly string[]): Promise<Map<string, ToolCallRecord[]>>;
}
