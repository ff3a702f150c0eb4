// The sweeper: on every instance, claims the due schedules (one transaction,
// so each firing is claimed by one instance) and starts each firing's run
// through the run service's ordinary start, as the schedule's owner: quotas,
// the queue and multitask apply as to any start. A firing on a schedule's
// conversation that is busy waits its turn (ENQUEUE). Between looks it sleeps
// until the soonest schedule's next firing, SCHEDULE_POLL_MS at most, and a
// schedule created or resumed on this instance wakes it; one created on
// another instance is that instance's sweeper's to fire on time, and this
// one's too within SCHEDULE_POLL_MS.
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
  /** The longest it sleeps between looks (SCHEDULE_POLL_MS). */
  pollMs: number;
  logger: Logger;
  now?: () => Date;
  /** Schedules claimed in one transaction, at most. */
  batch?: number;
  /** Told of each firing's outcome (tests, logs). */
  onFired?: (firing: ClaimedFiring, outcome: { runId: string } | { error: string }) => void;
}

/** The wait after a look that failed, or found firings due but claimed none (another instance did): a short one, never a busy loop. */
const RETRY_WAIT_MS = 1_000;

export class ScheduleSweeper {
  readonly #options: ScheduleSweeperOptions;
  readonly #now: () => Date;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | null = null;
  #stopped = true;
  #wakeAgain = false;

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

  /** Looks now (a schedule was created or resumed here): asleep, it may be waiting for a later firing. */
  wake(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#wakeAgain = true;
      return;
    }
    clearTimeout(this.#timer);
    this.#schedule(0);
  }

  #schedule(delay: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#wakeAgain = false;
      this.#running = this.#look()
        .catch((error: unknown) => {
          this.#options.logger.warn("schedule sweep failed", { error });
          return Math.min(this.#options.pollMs, RETRY_WAIT_MS);
        })
        .then((wait) => {
          this.#running = null;
          this.#schedule(this.#wakeAgain ? 0 : wait);
        });
    }, delay);
    this.#timer.unref?.();
  }

  /** One sweep: claims what is due now and starts each firing's run. Answers the firings claimed. */
  async sweep(): Promise<ClaimedFiring[]> {
    return (await this.#sweep()).claimed;
  }

  /** A sweep; answers how long to sleep after it. */
  async #look(): Promise<number> {
    return (await this.#sweep()).wait;
  }

  async #sweep(): Promise<{ claimed: ClaimedFiring[]; wait: number }> {
    const now = this.#now();
    const { pollMs } = this.#options;
    // A look on the reader first: with nothing due, no write lock (SQLite) or transaction is taken.
    // It reads the soonest firing within pollMs, to sleep until it.
    const [soonest] = await this.#options.store.due(new Date(now.getTime() + pollMs), 1);
    const dueIn = soonest?.nextRunAt ? soonest.nextRunAt.getTime() - now.getTime() : pollMs;
    if (dueIn > 0) return { claimed: [], wait: Math.min(dueIn, pollMs) };
    const claimed = await this.#options.store.claimDue(now, this.#options.batch ?? 50, this.#options.ownerId, (s) => decideFiring(s, now));
    for (const firing of claimed) await this.#fire(firing);
    // Fired: the next look says when the next firing is.
    return { claimed, wait: claimed.length ? 0 : Math.min(pollMs, RETRY_WAIT_MS) };
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
