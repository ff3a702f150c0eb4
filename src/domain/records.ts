// runledger's records: the rows every storage backend reads and writes, in the
// shapes the rest of the code uses. Values are stored as written here
// (statuses lowercase, error codes upper case), so the seed's own SQL works.

export const RUN_STATUSES = ["queued", "running", "completed", "failed", "cancelled", "interrupted", "waiting"] as const;
export type RunStatusValue = (typeof RUN_STATUSES)[number];
/** A run still to end: waiting its turn in the queue, or executing. A conversation has at most one. */
export type ActiveRunStatus = "queued" | "running";
export type TerminalRunStatus = Exclude<RunStatusValue, ActiveRunStatus>;
export const TERMINAL_STATUSES: ReadonlySet<RunStatusValue> = new Set(RUN_STATUSES.filter((s) => s !== "running" && s !== "queued"));

/** Why a queued run waits: its model endpoint is at its concurrency, or no instance has room for another run. */
export const QUEUE_REASONS = ["MODEL_BUSY", "INSTANCE_FULL", "BEHIND_ACTIVE_RUN"] as const;
export type QueueReasonValue = (typeof QUEUE_REASONS)[number];

export const RUN_KINDS = ["start", "resume", "edit"] as const;
export type RunKindValue = (typeof RUN_KINDS)[number];

export const RUN_ERROR_CODES = [
  "MODEL_UNAVAILABLE",
  "MODEL_NOT_FOUND",
  "MODEL_TIMEOUT",
  "MODEL_ERROR",
  "RECURSION_LIMIT",
  "CANCELLED",
  "INTERRUPTED",
  "AGENT_FAILURE",
] as const;
export type RunErrorCodeValue = (typeof RUN_ERROR_CODES)[number];

/** One chat. Its id is the LangGraph thread_id. */
export interface ConversationRecord {
  id: string;
  title: string;
  createdAt: Date;
  updatedAt: Date;
  /** Messages in the thread after the latest finished run. */
  messageCount: number;
  /** The agent every run of the conversation runs (it keeps the one it started with). */
  agent: string;
  /** The conversation this one was forked from (null once that one is deleted, or for none). */
  forkedFromConversationId: string | null;
  /** The source's checkpoint the fork copied its thread up to (kept when the source is deleted). */
  forkedFromCheckpointId: string | null;
  /** The principal that created it (src/domain/principal.ts); null for rows from before owners were recorded. */
  owner: string | null;
  /** The expiry its owner set (setConversationExpiry); null or absent: the agent's or the deployment's idle days apply (docs/retention.md). */
  expiresAt?: Date | null;
}

/** What model calls cost, as Ollama reported it at the end of each call. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  modelCalls: number;
  /** The sum of Ollama's total_duration over the model calls. */
  modelDurationMs: number;
}

/** A run's usage, and how long its first token took. */
export interface RunUsage extends Usage {
  /** From the run's start to its first token, measured by runledger; null when it streamed none. */
  timeToFirstTokenMs: number | null;
}

/** An interrupt a run raised (LangGraph's interrupt()), and how it was answered. */
export interface InterruptRecord {
  /** LangGraph's interrupt id. */
  id: string;
  /** The run that raised it. */
  runId: string;
  conversationId: string;
  /** The graph node that raised it. */
  node: string;
  /** What the graph asked (JSON). */
  value: unknown;
  createdAt: Date;
  /** The resume that answered it; null while unanswered (or when a new message superseded it). */
  answeredByRunId: string | null;
  answer: unknown;
  answeredAt: Date | null;
}

/** One attempt to advance a conversation's thread. */
export interface RunRecord {
  id: string;
  conversationId: string;
  kind: RunKindValue;
  status: RunStatusValue;
  /** The user message; null for a resume. */
  input: string | null;
  errorCode: RunErrorCodeValue | null;
  errorMessage: string | null;
  /** Text streamed before a failure, cancel or interruption. */
  partialOutput: string | null;
  startedAt: Date;
  finishedAt: Date | null;
  /** Where the run's correlation window starts (src/correlation/marks.ts). */
  startMark: string;
  /** Where it ends; null while the run is running (an open window). */
  endMark: string | null;
  /** seq of the run's terminal event (0 while running), so a late subscriber gets it from storage. */
  lastEventSeq: number;
  /** The process that executes (or executed) the run. */
  ownerId: string | null;
  /** The checkpoint the run started from (the thread's latest when it started); null on an empty thread. */
  startCheckpointId: string | null;
  /** Stored when the run ends; null while it runs. */
  usage: RunUsage | null;
  /** The principal that started it; null for runs from before principals. */
  startedBy: string | null;
  /** That principal's role, for an instance that claims the run from the queue. */
  startedByRole: "user" | "admin" | null;
  /** The model endpoint whose capacity the run needs (see src/runs/admission.ts); null for runs from before the queue. */
  endpoint: string | null;
  /** When the run entered the queue; null for runs from before the queue. */
  queuedAt: Date | null;
  /** Why it waits, while queued; null otherwise. */
  queueReason: QueueReasonValue | null;
  /** The W3C traceparent its span continues (the request that started it), so any instance that executes it continues that trace; null with tracing off. */
  traceParent: string | null;
  /** What an edit run wrote; null for other kinds. */
  edit: StateEdit | null;
}

/** What editState wrote into a thread: the values, as if node `asNode` had (null: as LangGraph chose). */
export interface StateEdit {
  values: Record<string, unknown>;
  asNode: string | null;
}

/** A server process that executes runs; its heartbeat tells the others it is alive. */
export interface OwnerRecord {
  id: string;
  pid: number;
  host: string;
  startedAt: Date;
  heartbeatAt: Date;
}

export type WebhookEventValue = "RUN_ENDED" | "RUN_WAITING";

/** Where one run's events are told (docs/webhooks.md, src/domain/webhooks.ts), and which of them. */
export interface WebhookTarget {
  url: string;
  events: readonly WebhookEventValue[];
}

/** What starting a run writes. */
export interface NewRun {
  id: string;
  conversationId: string;
  kind: RunKindValue;
  input: string | null;
  startedAt: Date;
  startMark: string;
  ownerId: string;
  startCheckpointId: string | null;
  /** The principal that starts it; quotas count its runs. Absent: no one's. */
  startedBy?: string | null;
  startedByRole?: "user" | "admin" | null;
  /** The model endpoint whose capacity it needs; the run waits queued until an instance claims it (RunStore.claimQueued). */
  endpoint?: string | null;
  /**
   * Multitask ENQUEUE: when the conversation has an active run, wait queued
   * behind it (queueReason BEHIND_ACTIVE_RUN) instead of RunInProgressError.
   * Only a run with an endpoint can wait.
   */
  behind?: boolean;
  /** See RunRecord.traceParent. */
  traceParent?: string | null;
  /**
   * The starter's quotas, checked in the same transaction as the insert (so they
   * hold across instances): QuotaExceededError when it already has `activeRuns`
   * running, or made `runsPerMinute` writes (runs, edits, forks) in the last minute. 0 is no limit;
   * absent, none is checked.
   */
  quota?: RunQuota;
  /** The interrupts this run answers (a resume with responses): recorded as answered by it, in the same transaction. */
  answers?: { interruptId: string; value: unknown }[];
  /** For an edit run: what it writes. */
  edit?: StateEdit | null;
  /** The caller's idempotency key, recorded with the run in its transaction (IdempotencyKeyTakenError when another call recorded it first). */
  idempotency?: NewIdempotencyKey;
  /** Where its end and wait are told (docs/webhooks.md), recorded with it. */
  webhooks?: readonly WebhookTarget[];
  /** The schedule firing that starts it: linked to the run in the run's own transaction, so no run of a firing goes unlinked. */
  firing?: { scheduleId: string; fireAt: Date };
}

/** A client's idempotency key and what its first call created; kept 24 hours. */
export interface IdempotencyRecord {
  principal: string;
  key: string;
  operation: "startRun" | "resumeRun" | "forkConversation" | "cancelRun" | "editState";
  /** SHA-256 of the operation's input. */
  requestHash: string;
  conversationId: string | null;
  runId: string | null;
  createdAt: Date;
}

export type NewIdempotencyKey = Omit<IdempotencyRecord, "conversationId" | "runId">;

/** Per-principal limits (QUOTA_ACTIVE_RUNS, QUOTA_RUNS_PER_MINUTE); 0 is no limit. */
export interface RunQuota {
  activeRuns: number;
  runsPerMinute: number;
}

/** What a new conversation starts with. */
export interface NewConversation {
  title: string;
  agent: string;
  /** The creating principal's id. */
  owner: string | null;
  forkedFrom?: { conversationId: string; checkpointId: string };
  /** The messages its thread already holds: a fork's copied history; 0 when omitted. */
  messageCount?: number;
}

/** What finishing a run writes, in one transaction with the conversation's updatedAt and messageCount. */
export interface RunOutcome {
  status: TerminalRunStatus;
  errorCode: RunErrorCodeValue | null;
  errorMessage: string | null;
  partialOutput: string | null;
  finishedAt: Date;
  endMark: string;
  lastEventSeq: number;
  /** The thread's message count after the run; null keeps the stored count. */
  messageCount: number | null;
  usage: RunUsage;
  /** The interrupts a run that ends `waiting` raised; recorded with its outcome. */
  interrupts: { id: string; node: string; value: unknown }[];
}

export const CHECKPOINT_SOURCES = ["input", "loop", "update", "fork"] as const;
export type CheckpointSourceValue = (typeof CHECKPOINT_SOURCES)[number];

/** One LangGraph checkpoint of a conversation's thread (root namespace). */
export interface CheckpointRecord {
  /** LangGraph's checkpoint_id: a time-ordered UUID v6. */
  id: string;
  /** The thread id, which is the conversation id. */
  threadId: string;
  parentId: string | null;
  step: number;
  source: CheckpointSourceValue;
  /** The checkpoint's own `ts`. */
  createdAt: Date;
}

/** A task's output (or its error) recorded against a checkpoint. */
export interface CheckpointWriteRecord {
  threadId: string;
  checkpointId: string;
  taskId: string;
  channel: string;
  idx: number;
  /** The stored value as JSON (LangChain objects keep their serialized form); null when unreadable. */
  value: unknown;
}

/** LangGraph's channel for a failed task's error. */
export const ERROR_CHANNEL = "__error__";
