// The sweeper: on every instance, every SCHEDULE_POLL_MS, claims the due
// schedules (one transaction, so each firing is claimed by one instance) and
// starts each firing's run through the run service's ordinary start, as the
// schedule's owner: quotas, the queue and multitask apply as to any start. A
// firing on a schedule's conversation that is busy waits its turn (ENQUEUE).
import { queuedRunPrincipal } from "../domain/principal.ts";
import type { ConversationRecord, RunRecord } from "../domain/records.ts";
import type { Logger } from "../logger.ts";
import type { StartRunRequest } from "../runs/start-run.ts";
import type { ClaimedFiring, ScheduleStore } from "../storage/schedules/types.ts";
import type { Principal } from "../domain/principal.ts";
import { decideFiring } from "./cron.ts";

/** The run service's start, as the sweeper uses it. */
export interface RunStarter {
  startRun(input: StartRunRequest, principal: Principal): Promise<{ run: RunRecord; conversation: ConversationRecord }>;
}

export interface ScheduleSweeperOptions {
  store: ScheduleStore;
  runs: RunStarter;
  /** This instance's run owner id: recorded as each firing's claimer. */
  ownerId: string;
  pollMs: number;
  logger: Logger;
  now?: () => Date;
  /** Schedules claimed in one transaction, at most. */
  batch?: number;
  /** Told of each firing's outcome (tests, logs). */
  onFired?: (firing: ClaimedFiring, outcome: { runId: string } | { error: string }) => void;
}

export class ScheduleSweeper {
  readonly #options: ScheduleSweeperOptions;
  readonly #now: () => Date;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | null = null;
  #stopped = true;

  constructor(options: ScheduleSweeperOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => new Date());
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#schedule(0);
  }

  /** Stops polling and waits for a sweep under way (its runs are started, or their failure recorded). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  #schedule(delay: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#running = this.sweep()
        .then(() => undefined)
        .catch((error: unknown) => this.#options.logger.warn("schedule sweep failed", { error }))
        .finally(() => {
          this.#running = null;
          this.#schedule(this.#options.pollMs);
        });
    }, delay);
    this.#timer.unref?.();
  }

  /** One sweep: claims what is due now and starts each firing's run. Answers the firings claimed. */
  async sweep(): Promise<ClaimedFiring[]> {
    const now = this.#now();
    // A look on the reader first: with nothing due, no write lock (SQLite) or transaction is taken.
    if ((await this.#options.store.due(now, 1)).length === 0) return [];
    const claimed = await this.#options.store.claimDue(now, this.#options.batch ?? 50, this.#options.ownerId, (s) => decideFiring(s, now));
    for (const firing of claimed) await this.#fire(firing);
    return claimed;
  }

  async #fire(firing: ClaimedFiring): Promise<void> {
    const { schedule, fireAt } = firing;
    let outcome: { runId: string } | { error: string };
    try {
      const { run } = await this.#options.runs.startRun(
        {
          conversationId: schedule.conversationId,
          message: schedule.message,
          // A conversation keeps its agent; a new one takes the schedule's.
          agent: schedule.conversationId ? null : schedule.agent,
          multitask: schedule.conversationId ? "enqueue" : null,
          webhook: schedule.webhook,
          // Linked in the run's own transaction: a crash cannot leave the run without its firing.
          firing: { scheduleId: schedule.id, fireAt },
        },
        queuedRunPrincipal(schedule.owner, schedule.ownerRole),
      );
      outcome = { runId: run.id };
    } catch (error) {
      outcome = { error: (error as Error).message ?? String(error) };
      this.#options.logger.warn("a schedule's firing started no run", { scheduleId: schedule.id, fireAt: fireAt.toISOString(), error });
    }
    // A started run was linked to its firing in its own transaction; what is left to record is why none started.
    if ("error" in outcome) {
      try {
        await this.#options.store.recordFiring(schedule.id, fireAt, outcome);
      } catch (error) {
        this.#options.logger.warn("a schedule's firing was not recorded", { scheduleId: schedule.id, error });
      }
    }
    this.#options.onFired?.(firing, outcome);
  }
}
