// The run store seam: the `conversations`, `runs`, `interrupts` and `run_owners`
// rows. The run service writes through it and every GraphQL read of those rows
// goes through it (batched per operation by src/read/scope.ts). Backends:
// sqlite.ts and postgres.ts; test/conformance/run-store.ts holds every backend
// to the same rules.
import type {
  ConversationRecord,
  InterruptRecord,
  NewConversation,
  NewRun,
  OwnerRecord,
  RunOutcome,
  RunQuota,
  RunRecord,
  RunUsage,
  Usage,
} from "../../domain/records.ts";

/** What completeEndedElsewhere adds to a run another process ended. */
export interface EndedElsewhereFacts {
  lastEventSeq: number;
  partialOutput: string | null;
  endMark: string;
  /** Absent when the process that adds the facts did not execute the run (start-up recovery). */
  usage?: RunUsage;
  /** The thread's message count as the executing process left it; becomes the conversation's when given. */
  messageCount?: number | null;
}
import type { PageQuery } from "../page.ts";
import type { IdempotencyRecord } from "../../domain/records.ts";

/** How long an idempotency key answers with its first call's result. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** Another call recorded the idempotency key first (a retry racing the original, on any instance); nothing was written. */
export class IdempotencyKeyTakenError extends Error {
  override name = "IdempotencyKeyTakenError";
  constructor(
    readonly principal: string,
    readonly key: string,
  ) {
    super(`idempotency key ${JSON.stringify(key)} was recorded by another call`);
  }
}
import type { ClaimRequest } from "./queue.ts";

export type { ClaimRequest } from "./queue.ts";

export interface RunStore {
  // Writes. Each is one transaction; refusals throw before anything is written.

  /**
   * Creates the conversation when `newConversation` is given (else requires it to
   * exist: NotFoundError), inserts the run (RunInProgressError when the
   * conversation already has an active one: the database enforces one queued or
   * running run per conversation), records `run.answers` as answered by it, and
   * bumps the conversation's updatedAt. A run with an `endpoint` is inserted
   * `queued` (no owner) for claimQueued to admit; one without, `running`. With
   * `run.behind`, a conversation's active run does not refuse it: it is queued
   * behind it (and any others waiting there), BEHIND_ACTIVE_RUN.
   */
  startRun(run: NewRun, newConversation?: NewConversation): Promise<{ run: RunRecord; conversation: ConversationRecord }>;
  /**
   * The outcome with its usage, updatedAt and messageCount, and the interrupts a
   * waiting run raised. Null when the run was no longer active (queued or
   * running): terminal states never change. A queued run ends this way only
   * when it is cancelled.
   */
  finishRun(runId: string, outcome: RunOutcome): Promise<RunRecord | null>;
  /**
   * A conversation without a run yet (a fork asked for without a message). With
   * `quota`, its owner's quotas are checked in the same transaction, the fork
   * counting as one write (QuotaExceededError, nothing written).
   */
  createConversation(id: string, conversation: NewConversation, at: Date, quota?: RunQuota): Promise<ConversationRecord>;
  renameConversation(id: string, title: string, at: Date): Promise<ConversationRecord>;
  /** Deletes the conversation, its runs and its LangGraph thread. NotFoundError, or RunInProgressError while a run is active. */
  deleteConversation(id: string): Promise<ConversationRecord>;
  /**
   * What only the executing process knows, added to a run another process ended
   * (a cross-process cancel): the seq of its terminal event, the text it streamed
   * (kept if none was recorded), the end of its correlation window (moved
   * later, never earlier) and, when given, the usage of the model calls it
   * finished (replacing the zeros the cancel wrote), and the conversation's
   * message count when given. Status, code and message stay as recorded.
   */
  completeEndedElsewhere(runId: string, facts: EndedElsewhereFacts): Promise<void>;

  /**
   * Admits queued runs to `request.ownerId`, in one transaction that no other
   * claim can interleave with (PostgreSQL: an advisory lock, rows taken FOR
   * UPDATE SKIP LOCKED): as many as it has room for, each only while its
   * endpoint has fewer running runs than its concurrency, fairly across starters
   * (queue.ts). First, the oldest run waiting behind each conversation whose
   * active run ended becomes an ordinary queued run. Claimed runs become
   * `running` with that owner; the others' queueReason is brought up to date.
   * Returns the claimed runs.
   */
  claimQueued(request: ClaimRequest): Promise<RunRecord[]>;
  /** Whether any run is `queued` (held ones and those waiting behind another included): one indexed read. */
  anyQueued(): Promise<boolean>;
  /**
   * A running run of `ownerId` whose model was too busy to take its call goes
   * back to `queued` (MODEL_BUSY, queued at `at`), its endpoint slot free for
   * another run. It stays held by its owner, whose process keeps its graph
   * paused at that call: only that owner's claim admits it again, a cancel
   * keeps its correlation window, and if the owner goes it is recovered as
   * interrupted, like a running run. False when the row was no longer running
   * there.
   */
  requeueHeld(runId: string, ownerId: string, at: Date): Promise<boolean>;
  /**
   * A claimed run that waited behind another starts later than it was queued:
   * its correlation window starts at `startMark`, its thread at `startCheckpointId`.
   */
  moveStart(runId: string, startMark: string, startCheckpointId: string | null): Promise<void>;
  /** Each queued run's place in its endpoint's queue (1 is next), oldest first; runs not queued are left out. */
  queuePositions(runIds: readonly string[]): Promise<Map<string, number>>;

  /**
   * Drops the thread's checkpoints after `keepThrough` (every one with null),
   * and their writes: a ROLLBACK of a cancelled run's work. RunInProgressError
   * while the conversation has an active run.
   */
  rollBackThread(conversationId: string, keepThrough: string | null): Promise<void>;
  /** The principal's idempotency key, unless it was recorded before `since` (then it is as good as gone). */
  idempotencyKey(principal: string, key: string, since: Date): Promise<IdempotencyRecord | null>;
  /**
   * Records a key for a call that started no run (a cancel, a fork without a
   * message); a run's key is recorded by startRun. IdempotencyKeyTakenError when
   * another call recorded it first. Keys older than IDEMPOTENCY_TTL_MS are forgotten.
   */
  recordIdempotencyKey(record: IdempotencyRecord): Promise<void>;

  // Owners: which process executes which run.
  registerOwner(owner: OwnerRecord): Promise<void>;
  heartbeat(ownerId: string, at: Date): Promise<void>;
  removeOwner(ownerId: string): Promise<void>;
  listOwners(): Promise<OwnerRecord[]>;
  /** The `running` rows (and held `queued` ones, requeueHeld) whose owner is in `goneOwnerIds` or is not a registered owner at all. */
  runsOfGoneOwners(goneOwnerIds: string[]): Promise<RunRecord[]>;
  /**
   * Marks `running` rows (and held `queued` ones) interrupted when their owner is in `goneOwnerIds`, or is
   * not a registered owner at all, and forgets the gone owners. `endMark` closes
   * their correlation windows, or the thread's latest checkpoint id when that is
   * later (the instance that recovers may have a clock behind the one that ran).
   * Their conversations' updatedAt becomes `at`, and their messageCount the one
   * in `messageCounts` (kept when a conversation is not listed). Returns the runs
   * it changed.
   */
  interruptRunsOfGoneOwners(
    goneOwnerIds: string[],
    at: Date,
    endMark: string,
    message: string,
    messageCounts: ReadonlyMap<string, number>,
  ): Promise<RunRecord[]>;
  /** Sets conversations' messageCount (a thread counted after its run was recorded). */
  recordMessageCounts(messageCounts: ReadonlyMap<string, number>): Promise<void>;

  /**
   * QuotaExceededError when `who` is at one of `quota`'s limits at `at`: a look
   * before costly work (a fork's copy) that a refusal would waste. The write's own
   * check, in its transaction, is the one that holds.
   */
  checkQuota(who: string, quota: RunQuota, at: Date): Promise<void>;

  // Reads. Batch readers take many keys and answer for each (missing keys are left out).
  getConversation(id: string): Promise<ConversationRecord | null>;
  /**
   * The latest moment the conversation has recorded: the greatest of its runs'
   * marks and its thread's checkpoint ids (null for none). A new run's start mark
   * must come after it (src/correlation/marks.ts, mintMarkAfter).
   */
  lastMark(conversationId: string): Promise<string | null>;
  getRun(id: string): Promise<RunRecord | null>;
  /** The conversation's queued or running run (one waiting behind another only when it is the first in line and nothing else is active). */
  activeRun(conversationId: string): Promise<RunRecord | null>;
  /** Ids among `runIds` that are no longer active, `running` or held `queued` (ended by another process, say). */
  notRunning(runIds: string[]): Promise<string[]>;
  conversations(ids: readonly string[]): Promise<Map<string, ConversationRecord>>;
  runs(ids: readonly string[]): Promise<Map<string, RunRecord>>;
  /** The queued or running run of each conversation that has one. */
  activeRuns(conversationIds: readonly string[]): Promise<Map<string, RunRecord>>;
  /** The most recently started run of each conversation that has runs. */
  latestRuns(conversationIds: readonly string[]): Promise<Map<string, RunRecord>>;
  /** Every run of each conversation in start order (by startMark, as the correlation needs); conversations without runs get []. */
  runsOf(conversationIds: readonly string[]): Promise<Map<string, RunRecord[]>>;
  /** One page of each conversation's runs, oldest first (startedAt, then id); every conversation gets a list. */
  runPages(conversationIds: readonly string[], page: PageQuery): Promise<Map<string, RunRecord[]>>;
  /** How many runs each conversation has; every conversation gets a count. */
  runCounts(conversationIds: readonly string[]): Promise<Map<string, number>>;
  /** The sum of each conversation's runs' usage; every conversation gets one. */
  usageOf(conversationIds: readonly string[]): Promise<Map<string, Usage>>;
  /** Every interrupt raised in each conversation, oldest first; every conversation gets a list. */
  interruptsOf(conversationIds: readonly string[]): Promise<Map<string, InterruptRecord[]>>;
}
