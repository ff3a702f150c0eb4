// The retention seam (docs/retention.md): what the sweeper finds and deletes,
// in bounded batches, and the lease that lets one instance at a time sweep.
// Conversations themselves are deleted through the run store's
// deleteConversation (with their thread, in one transaction); this seam finds
// which are due and prunes what a conversation keeps while it lives: LangGraph
// checkpoints no run, interrupt or fork points at beyond the latest K, and the
// events, tool journal and idempotency keys of long-ended runs.
import type { ConversationRecord } from "../../domain/records.ts";

/** When idle conversations expire: days since their last activity, by agent, else the deployment's; null keeps them. */
export interface ExpiryPolicy {
  /** `RETENTION_CONVERSATION_DAYS`; null: conversations of agents without their own days are kept. */
  defaultDays: number | null;
  /** Each agent's `retention.conversationDays`, where the agent file sets it. */
  agentDays: Readonly<Record<string, number>>;
}

/** The rows retention prunes by age, each with its own table. */
export type AgedTable = "run_events" | "tool_calls" | "idempotency_keys" | "webhook_deliveries";

export interface RetentionStore {
  /** Sets (or with null clears) the conversation's own expiry. NotFoundError for an unknown id. */
  setExpiry(conversationId: string, expiresAt: Date | null): Promise<ConversationRecord>;
  /**
   * Conversations due for deletion at `now`, oldest activity first, at most
   * `limit`: their own expiry has passed, or (without one) they have been idle
   * (`updated_at`) for their agent's or the deployment's days. Those with a
   * queued or running run are left out.
   */
  expiredConversations(policy: ExpiryPolicy, now: Date, limit: number): Promise<string[]>;
  /** Threads (by id, after `after`, in id order, at most `limit`) with more than `keep` root checkpoints. */
  threadsOverKeep(keep: number, after: string | null, limit: number): Promise<string[]>;
  /**
   * The thread's checkpoints the policy lets go, oldest first, at most `limit`:
   * root-namespace ones that are not among the latest `keep`, not a run's start
   * checkpoint, not the last checkpoint in a run's correlation window (where it
   * ended, or waits on an interrupt), and not a fork's source. None while the
   * thread's conversation has a queued or running run.
   */
  prunableCheckpoints(threadId: string, keep: number, limit: number): Promise<string[]>;
  /**
   * Deletes up to `limit` of what prunableCheckpoints answers, with their task
   * writes (and, on PostgreSQL, the channel values no remaining checkpoint of
   * the thread uses), in one transaction that looks again under its lock.
   * Answers the rows deleted, by table.
   */
  pruneCheckpoints(threadId: string, keep: number, limit: number): Promise<Record<string, number>>;
  /**
   * How many rows of `table` are older than `before`: the events and tool
   * journal of runs that ended (completed, failed, cancelled, interrupted)
   * before it, the idempotency keys recorded before it, the webhook deliveries
   * (delivered or failed, never pending) recorded before it.
   */
  countAged(table: AgedTable, before: Date): Promise<number>;
  /** Deletes up to `limit` of those rows in one transaction; answers how many went. */
  pruneAged(table: AgedTable, before: Date, limit: number): Promise<number>;
  /**
   * Takes or renews the named lease for `holder` until `now + ttlMs`: true when
   * it is this holder's now (it was free, expired, or already its own).
   */
  acquireLease(name: string, holder: string, now: Date, ttlMs: number): Promise<boolean>;
  /** Lets the lease go, if `holder` has it. */
  releaseLease(name: string, holder: string): Promise<void>;
  /**
   * Gives freed space back to the file system, at most `maxPages` pages at a
   * time: SQLite's incremental vacuum when the file was made with
   * auto_vacuum = INCREMENTAL; 0 otherwise, and on PostgreSQL (its autovacuum
   * makes deleted rows' space reusable). Answers the pages given back.
   */
  reclaimSpace(maxPages: number): Promise<number>;
}
