// Which process owns which running run. Each process registers as an owner and
// renews a heartbeat; recovery takes only the runs whose owner is gone, so a
// second process on the same database file never interrupts a live process's run.
import { randomUUID } from "node:crypto";
import os from "node:os";
import type { OwnerRecord, RunRecord } from "../domain/records.ts";
import { mintMark } from "../correlation/index.ts";
import type { RunStore } from "../storage/run-store/types.ts";
import type { EventBus } from "../storage/event-bus/types.ts";

export interface OwnershipOptions {
  heartbeatMs: number;
  /** An owner whose heartbeat is older than this is gone. */
  leaseMs: number;
  host?: string;
  pid?: number;
  now?: () => Date;
  /** Whether a process on this host is alive (signal 0). */
  isPidAlive?: (pid: number) => boolean;
  onError?: (error: unknown) => void;
  /**
   * Where a recovered run's subscribers are: its log is ended with the
   * INTERRUPTED status (on any instance, when the bus is shared), so they get
   * the outcome at once instead of waiting for a log that will never end.
   */
  bus?: EventBus;
  /** Told of each recovered run once it is recorded (conversation lists). */
  onRecovered?: (run: RunRecord) => void;
  /**
   * The message count of each listed conversation's thread, recorded with the
   * interruption (the process that ran the run cannot tell it any more); without
   * it the counts stay as they were.
   */
  messageCounts?: (conversationIds: string[]) => Promise<Map<string, number>>;
}

export const INTERRUPTED_MESSAGE = "the process running this run stopped before it finished";

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

export class RunOwnership {
  readonly id = randomUUID();
  readonly #host: string;
  readonly #pid: number;
  readonly #now: () => Date;
  readonly #isPidAlive: (pid: number) => boolean;
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | null = null;

  constructor(
    private readonly store: RunStore,
    private readonly options: OwnershipOptions,
  ) {
    this.#host = options.host ?? os.hostname();
    this.#pid = options.pid ?? process.pid;
    this.#now = options.now ?? (() => new Date());
    this.#isPidAlive = options.isPidAlive ?? pidAlive;
  }

  async register(): Promise<void> {
    const now = this.#now();
    await this.store.registerOwner({ id: this.id, pid: this.#pid, host: this.#host, startedAt: now, heartbeatAt: now });
  }

  isGone(owner: OwnerRecord, now: Date): boolean {
    if (owner.id === this.id) return false;
    if (now.getTime() - owner.heartbeatAt.getTime() > this.options.leaseMs) return true;
    if (owner.host !== this.#host) return false;
    // Same host: a dead pid, or our own pid under another owner id (a previous
    // incarnation of this process slot, as after a container restart), is gone now.
    return owner.pid === this.#pid || !this.#isPidAlive(owner.pid);
  }

  /** Turns the running runs of gone owners into `interrupted`. */
  async recover(): Promise<RunRecord[]> {
    const now = this.#now();
    const owners = await this.store.listOwners();
    const gone = owners.filter((o) => this.isGone(o, now)).map((o) => o.id);
    const orphans = await this.store.runsOfGoneOwners(gone);
    // Nothing to record: no write (this runs on every heartbeat).
    if (orphans.length === 0 && gone.length === 0) return [];
    const counts = await this.#messageCounts(orphans.map((r) => r.conversationId));
    const recovered = await this.store.interruptRunsOfGoneOwners(gone, now, mintMark(), INTERRUPTED_MESSAGE, counts);
    // A run orphaned between the read and the write: its thread is counted now.
    const uncounted = recovered.map((r) => r.conversationId).filter((id) => !counts.has(id));
    if (uncounted.length) await this.store.recordMessageCounts(await this.#messageCounts(uncounted));
    for (const run of recovered) {
      try {
        const ended = await this.options.bus?.endAbandonedRun(run.id, run.conversationId, {
          type: "status",
          status: "interrupted",
          errorCode: "INTERRUPTED",
          errorMessage: run.errorMessage,
        });
        // The terminal event's seq, so a subscriber asking storage later gets the same one.
        if (ended) await this.store.completeEndedElsewhere(run.id, { lastEventSeq: ended.seq, partialOutput: null, endMark: run.endMark! });
      } catch (error) {
        this.options.onError?.(error);
      }
      this.options.onRecovered?.(run);
    }
    return recovered;
  }

  async #messageCounts(conversationIds: string[]): Promise<Map<string, number>> {
    const ids = [...new Set(conversationIds)];
    return ids.length && this.options.messageCounts ? this.options.messageCounts(ids) : new Map();
  }

  /** Renews the heartbeat and sweeps for gone owners every `heartbeatMs`; `onTick` runs after each. */
  start(onTick?: () => Promise<void>): void {
    this.#timer = setInterval(() => {
      if (this.#ticking) return;
      this.#ticking = (async () => {
        try {
          await this.store.heartbeat(this.id, this.#now());
          await this.recover();
          await onTick?.();
        } catch (error) {
          this.options.onError?.(error);
        } finally {
          this.#ticking = null;
        }
      })();
    }, this.options.heartbeatMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#ticking;
    await this.store.removeOwner(this.id);
  }
}
