// The shapes the console's documents select (documents.ts), as the API answers
// them. Enums are plain strings: a value the console does not know yet (a new
// run status, say) must still render, not break the page.

export type RunStatus = "RUNNING" | "COMPLETED" | "FAILED" | "CANCELLED" | "INTERRUPTED" | (string & {});
export type RunKind = "START" | "RESUME" | (string & {});

export interface ToolCall {
  id: string;
  name: string;
  args: unknown;
}

export interface Message {
  id: string;
  role: "USER" | "ASSISTANT" | "TOOL" | (string & {});
  content: string;
  toolCalls: ToolCall[];
  toolCallId: string | null;
  name: string | null;
}

export interface RunRef {
  id: string;
  status: RunStatus;
}

/** One row of the conversation list, from the list query or a conversationsChanged notice. */
export interface ConversationRow {
  id: string;
  title: string;
  createdAt: string;
  updatedAt: string;
  messageCount: number;
  deleted: boolean;
  activeRun: (RunRef & { startedAt: string }) | null;
  latestRun: (RunRef & { kind: RunKind; errorCode: string | null }) | null;
}

export interface CheckpointSummary {
  id: string;
  step: number;
  source: string;
  next: string[];
  createdAt: string;
  messageCount: number;
  run: { id: string } | null;
}

export interface TaskError {
  taskId: string;
  node: string | null;
  message: string;
  checkpoint: { id: string; step: number };
}

export interface RunDetails {
  id: string;
  kind: RunKind;
  status: RunStatus;
  input: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  partialOutput: string | null;
  startedAt: string;
  finishedAt: string | null;
  messages: Message[];
  failedTasks: TaskError[];
  // Room for Run.usage (tokens, time to first token) and Run.interrupts once the API has them.
}

export interface ConversationDetails {
  id: string;
  title: string;
  createdAt: string;
  updatedAt: string;
  messageCount: number;
  next: string[];
  resumable: boolean;
  messages: Message[];
  activeRun: { id: string } | null;
  runs: { totalCount: number; edges: { node: RunDetails }[] };
  checkpoints: { pageInfo: { hasPreviousPage: boolean }; edges: { node: CheckpointSummary }[] };
}

/** Every RunEvent member the console selects; __typename tells which fields are set. */
export type RunEvent =
  | { __typename: "RunStatusEvent"; seq: number; runId: string; at: string; status: RunStatus; errorCode: string | null; errorMessage: string | null }
  | { __typename: "TokenEvent"; seq: number; runId: string; at: string; text: string; messageId: string | null; node: string }
  | { __typename: "ToolCallEvent"; seq: number; runId: string; at: string; toolCallId: string; name: string; args: unknown }
  | { __typename: "ToolResultEvent"; seq: number; runId: string; at: string; toolCallId: string; name: string; content: string; isError: boolean }
  | { __typename: "CheckpointEvent"; seq: number; runId: string; at: string; checkpoint: CheckpointSummary }
  | { __typename: "ReplayGapEvent"; seq: number; runId: string; at: string; fromSeq: number; toSeq: number };

/** A typed refusal: a member of a mutation's result union implementing Error. */
export interface Refusal {
  __typename: string;
  code: string;
  message: string;
}
