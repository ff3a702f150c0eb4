// The shapes the console's documents select (documents.ts), as the API answers
// them. Enums are plain strings: a value the console does not know yet (a new
// run status, say) must still render, not break the page.

/** WAITING: the run paused on an interrupt until a person answers it (resumeRun with responses). */
export type RunStatus = "RUNNING" | "WAITING" | "COMPLETED" | "FAILED" | "CANCELLED" | "INTERRUPTED" | (string & {});
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

export interface AgentTool {
  name: string;
  description: string;
  /** builtin, or mcp:<server>. */
  source: string;
  requiresApproval: boolean;
}

export interface Agent {
  name: string;
  description: string;
  kind: "CHAT" | "GRAPH" | (string & {});
  model: string;
  tools: AgentTool[];
}

export type InterruptState = "PENDING" | "ANSWERED" | "SUPERSEDED" | (string & {});

/** A question a run's graph asked (interrupt()); the built-in agent's tool approvals are one kind. */
export interface Interrupt {
  id: string;
  node: string;
  value: unknown;
  state: InterruptState;
  createdAt: string;
  answer: unknown;
  answeredAt: string | null;
  answeredBy: { id: string } | null;
  run: { id: string };
}

/** What model calls cost, summed over a conversation's runs. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  modelCalls: number;
  modelDurationMs: number;
}

export interface RunUsage extends Usage {
  timeToFirstTokenMs: number | null;
}

/** One row of the conversation list, from the list query or a conversationsChanged notice. */
export interface ConversationRow {
  id: string;
  title: string;
  agentName: string;
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
  /** Stored when the run ends; null while it runs. */
  usage: RunUsage | null;
  interrupts: Interrupt[];
  startCheckpoint: { id: string; step: number } | null;
}

export interface ForkOrigin {
  conversation: { id: string; title: string } | null;
  checkpoint: { id: string; step: number } | null;
}

export interface ConversationDetails {
  id: string;
  title: string;
  createdAt: string;
  updatedAt: string;
  messageCount: number;
  agentName: string;
  /** Null when the agent is no longer configured. */
  agent: Agent | null;
  forkedFrom: ForkOrigin | null;
  usage: Usage;
  pendingInterrupts: Interrupt[];
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
  | { __typename: "CustomEvent"; seq: number; runId: string; at: string; name: string; data: unknown }
  | { __typename: "InterruptEvent"; seq: number; runId: string; at: string; interrupt: Interrupt }
  | { __typename: "ReplayGapEvent"; seq: number; runId: string; at: string; fromSeq: number; toSeq: number };

/** A typed refusal: a member of a mutation's result union implementing Error. */
export interface Refusal {
  __typename: string;
  code: string;
  message: string;
}
