// The retention sweeper (docs/retention.md): on every instance, every
// RETENTION_SWEEP_MS, it tries to take the retention lease; the one instance
// that holds it deletes what the policies let go, in bounded batches (each its
// own short transaction, so runs' writes go between them): expired
// conversations (as deleteConversation deletes them), checkpoints beyond the
// policy, old run events, tool journals and idempotency keys, then gives freed
// pages back (SQLite, when the file allows). A dry run counts and deletes nothing.
// It runs whatever the settings: owners' own expiries and idempotency keys past
// their TTL go in any case; the RETENTION_* policies add to that.
import type { RetentionConfig } from "../config.ts";
import type { ConversationRecord } from "../domain/records.ts";
import type { Logger } from "../logger.ts";
import type { RunStore } from "../storage/run-store/types.ts";
import { IDEMPOTENCY_TTL_MS } from "../storage/run-store/types.ts";
import type { AgedTable, ExpiryPolicy, RetentionStore } from "../storage/retention/types.ts";

export const LEASE_NAME = "retention-sweeper";
const DAY_MS = 24 * 60 * 60 * 1000;
/** Dry runs count at most this many of each kind (a report, not an inventory). */
const COUNT_LIMIT = 1_000_000;

export interface RetentionSweeperOptions {
  store: RetentionStore;
  runs: Pick<RunStore, "deleteConversation">;
  config: RetentionConfig;
  policy: ExpiryPolicy;
  /** Who holds the lease while this sweeper sweeps: the instance's run owner id. */
  holder: string;
  logger: Logger;
  now?: () => Date;
  /** Rows deleted per transaction, at most (default 200: on SQLite a batch then holds the write lock a few ms, docs/retention.md). */
  batch?: number;
  /** Told of every batch deleted, by table (metrics). */
  onDeleted?: (table: string, rows: number) => void;
  /** Told how each timed sweep went (metrics). */
  onSweep?: (outcome: "swept" | "standby" | "failed") => void;
  /** Told of each conversation it deleted (the conversationsChanged notice). */
  onConversationDeleted?: (conversation: ConversationRecord) => void;
}

/** What one sweep deleted (or, dry, would delete), by table. */
export interface SweepReport {
  dryRun: boolean;
  deleted: Record<string, number>;
  /** SQLite pages given back to the file system. */
  reclaimedPages: number;
  durationMs: number;
}

export interface SweeperStatus {
  /** active: this instance holds the lease; standby: another does (or this one has not swept yet). */
  state: "active" | "standby";
  lastSweepAt: string | null;
  lastError: string | null;
}

export class RetentionSweeper {
  readonly #o: RetentionSweeperOptions;
  readonly #now: () => Date;
  readonly #batch: number;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | null = null;
  #stopped = true;
  #status: SweeperStatus;

  constructor(options: RetentionSweeperOptions) {
    this.#o = options;
    this.#now = options.now ?? (() => new Date());
    this.#batch = options.batch ?? 200;
    this.#status = { state: "standby", lastSweepAt: null, lastError: null };
  }

  status(): SweeperStatus {
    return { ...this.#status };
  }

  /** The lease outlives a few missed sweeps, so a busy holder keeps it; a stopped one is replaced after it. */
  get #leaseMs(): number {
    return Math.max(3 * this.#o.config.sweepMs, 30_000);
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    // Not at once: start-up has enough to do, and a sweep can wait its period.
    this.#schedule(this.#o.config.sweepMs);
  }

  /** Stops sweeping, waits for a sweep under way, and lets the lease go. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
    if (this.#status.state === "active") {
      await this.#o.store.releaseLease(LEASE_NAME, this.#o.holder).catch((error: unknown) => this.#o.logger.warn("retention lease not released", { error }));
      this.#status.state = "standby";
    }
  }

  #schedule(delay: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#running = this.sweep()
        .then((report) => this.#o.onSweep?.(report ? "swept" : "standby"))
        .catch((error: unknown) => {
          this.#o.onSweep?.("failed");
          this.#status.lastError = (error as Error).message ?? String(error);
          this.#o.logger.warn("retention sweep failed", { error });
        })
        .finally(() => {
          this.#running = null;
          this.#schedule(this.#o.config.sweepMs);
        });
    }, delay);
    this.#timer.unref?.();
  }

  /** Takes (or renews) the lease; answers whether this instance holds it. */
  async #lease(): Promise<boolean> {
    const held = await this.#o.store.acquireLease(LEASE_NAME, this.#o.holder, this.#now(), this.#leaseMs);
    this.#status.state = held ? "active" : "standby";
    return held;
  }

  /**
   * One sweep. A dry run counts what would go and takes no lease; a real one
   * answers null when another instance holds the lease.
   */
  async sweep(options: { dryRun?: boolean } = {}): Promise<SweepReport | null> {
    const dryRun = options.dryRun ?? false;
    if (!dryRun && !(await this.#lease())) return null;
    const started = performance.now();
    const deleted: Record<string, number> = {};
    const count = (table: string, rows: number) => {
      if (rows === 0) return;
      deleted[table] = (deleted[table] ?? 0) + rows;
      if (!dryRun) this.#o.onDeleted?.(table, rows);
    };
    const now = this.#now();
    const { config } = this.#o;
    // Always: a conversation's own expiry applies whatever the settings say.
    await this.#conversations(now, dryRun, count);
    if (config.checkpointsKeep !== null) await this.#checkpoints(config.checkpointsKeep, dryRun, count);
    const aged: [AgedTable, Date | null][] = [
      ["run_events", config.eventsDays === null ? null : new Date(now.getTime() - config.eventsDays * DAY_MS)],
      ["tool_calls", config.eventsDays === null ? null : new Date(now.getTime() - config.eventsDays * DAY_MS)],
      // Delivered or given up: what Run.webhookDeliveries shows of long-ended runs.
      ["webhook_deliveries", config.eventsDays === null ? null : new Date(now.getTime() - config.eventsDays * DAY_MS)],
      // Past their TTL they answer nothing: they go whatever RETENTION_EVENTS_DAYS says.
      ["idempotency_keys", new Date(now.getTime() - IDEMPOTENCY_TTL_MS)],
    ];
    for (const [table, before] of aged) if (before) await this.#aged(table, before, dryRun, count);
    let reclaimedPages = 0;
    if (!dryRun && Object.keys(deleted).length > 0) {
      for (let step = 0, freed = 1; freed > 0 && step < 10_000; step++) reclaimedPages += freed = await this.#o.store.reclaimSpace(256);
    }
    if (!dryRun) this.#status = { state: "active", lastSweepAt: now.toISOString(), lastError: null };
    return { dryRun, deleted, reclaimedPages, durationMs: performance.now() - started };
  }

  async #conversations(now: Date, dryRun: boolean, count: (table: string, rows: number) => void): Promise<void> {
    const { store, policy } = this.#o;
    if (dryRun) return count("conversations", (await store.expiredConversations(policy, now, COUNT_LIMIT)).length);
    const tried = new Set<string>();
    for (;;) {
      const due = (await store.expiredConversations(policy, now, 50)).filter((id) => !tried.has(id));
      if (due.length === 0) return;
      for (const id of due) {
        tried.add(id);
        try {
          const conversation = await this.#o.runs.deleteConversation(id);
          count("conversations", 1);
          this.#o.onConversationDeleted?.(conversation);
        } catch (error) {
          // A run started on it since it was found (RunInProgressError), or its owner deleted it: it stays, or is gone.
          this.#o.logger.debug("an expired conversation was not deleted", { conversationId: id, error });
        }
      }
    }
  }

  async #checkpoints(keep: number, dryRun: boolean, count: (table: string, rows: number) => void): Promise<void> {
    const { store } = this.#o;
    let after: string | null = null;
    for (;;) {
      const threads = await store.threadsOverKeep(keep, after, 100);
      for (const thread of threads) {
        if (dryRun) {
          count("checkpoints", (await store.prunableCheckpoints(thread, keep, COUNT_LIMIT)).length);
          continue;
        }
        for (;;) {
          const rows = await store.pruneCheckpoints(thread, keep, this.#batch);
          for (const [table, n] of Object.entries(rows)) count(table, n);
          if ((rows.checkpoints ?? 0) < this.#batch) break;
          await this.#keepLease();
        }
      }
      if (threads.length < 100) return;
      after = threads.at(-1)!;
    }
  }

  async #aged(table: AgedTable, before: Date, dryRun: boolean, count: (table: string, rows: number) => void): Promise<void> {
    if (dryRun) return count(table, await this.#o.store.countAged(table, before));
    for (;;) {
      const n = await this.#o.store.pruneAged(table, before, this.#batch);
      count(table, n);
      if (n < this.#batch) return;
      await this.#keepLease();
    }
  }

  /** Between batches of a long sweep: renew the lease, or stop when another instance has it now. */
  async #keepLease(): Promise<void> {
    if (!(await this.#lease())) throw new Error("the retention lease was taken by another instance mid-sweep");
  }
}
