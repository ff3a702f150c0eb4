// The execution side of the run service, behind the seam the API side hands
// runs over (../execution-seam.ts): this instance's runs, its claims on the
// queue, and their stops. A run executes here once its row is running with this
// instance as its owner: at once without admission, else when a claim takes it.
import type { RunRecord } from "../../domain/records.ts";
import type { RunTelemetry } from "../../telemetry/run-telemetry.ts";
import { createAdaptiveLimit, type AdaptiveLimit } from "../adaptive-limit.ts";
import { RunAbortReason } from "../classify.ts";
import { announceConversationChange } from "../conversation-notices.ts";
import type { RunExecution, RunHandover } from "../execution-seam.ts";
import { QueueClaims } from "./claim.ts";
import type { ExecutionContext, ExecutionOptions } from "./context.ts";
import { launchRun } from "./launch.ts";
import { abortForShutdown, abortRunsEndedElsewhere, listenForCancelRequests } from "./stop-runs.ts";

/**
 * How many times QUEUE_POLL_MS an instance waits between looks while the queue
 * is empty. A run queued anywhere (and a run ending anywhere) announces a
 * conversation change, which makes an idle instance look at once: this slow
 * look is for what no notice told of (a notice lost with Redis down).
 */
export const IDLE_POLL_FACTOR = 10;

export class RunExecutor implements RunExecution {
  readonly #ctx: ExecutionContext;
  readonly #claims: QueueClaims;
  readonly #stopListening: () => void;
  readonly #stopNotices: () => void = () => {};
  #accepting = true;
  #pollTimer: NodeJS.Timeout | undefined;
  /** Whether the poll timer is set for QUEUE_POLL_MS (the queue busy) rather than the idle wait. */
  #pollingBusy = false;
  /** Runs this instance admits now: MAX_ACTIVE_RUNS, or fewer while its event loop runs late (ADMISSION_LOOP_DELAY_MS). */
  readonly #limit: AdaptiveLimit | undefined;

  constructor(options: ExecutionOptions, { now, telemetry }: { now: () => Date; telemetry: RunTelemetry }) {
    this.#ctx = {
      options,
      now,
      telemetry,
      active: new Map(),
      held: new Map(),
      queuedBy: new Map(),
      queuedOrigin: new Map(),
      claimQueued: () => this.claimQueued(),
      announce: (change) => announceConversationChange(options.bus, options.logger, change),
    };
    if (options.admission) this.#limit = createAdaptiveLimit({ max: options.admission.maxActiveRuns, targetMs: options.admission.loopDelayTargetMs ?? 0 });
    // A look that finds the queue no longer empty brings the next poll forward.
    this.#claims = new QueueClaims(
      this.#ctx,
      this.#limit,
      () => this.#accepting,
      () => {
        if (this.#claims.busy && !this.#pollingBusy) this.#armPoll();
      },
    );
    if (options.admission) {
      // While the queue is empty, a change anywhere (a run queued by another instance, say) is looked at once;
      // while it is not, the poll at QUEUE_POLL_MS looks, as often as before, whatever the changes.
      this.#stopNotices = options.bus.onConversationChange(() => {
        if (!this.#claims.busy) void this.claimQueued();
      });
      this.#armPoll();
    }
    this.#stopListening = listenForCancelRequests(this.#ctx);
  }

  /**
   * Sets the next poll: QUEUE_POLL_MS away while there may be queued runs to
   * look after (runs queued by other instances, or left queued by a stopped
   * one, slots freed elsewhere, this instance's own queued runs claimed
   * elsewhere), IDLE_POLL_FACTOR times that while the queue is empty.
   */
  #armPoll(): void {
    clearTimeout(this.#pollTimer);
    if (!this.#accepting) return;
    const pollMs = this.#ctx.options.admission?.pollMs ?? 500;
    this.#pollingBusy = this.#claims.busy;
    this.#pollTimer = setTimeout(
      () =>
        void this.claimQueued()
          .then(() => this.#claims.forgetClaimedElsewhere())
          .finally(() => this.#armPoll()),
      this.#pollingBusy ? pollMs : pollMs * IDLE_POLL_FACTOR,
    );
    this.#pollTimer.unref();
  }

  get activeRunIds(): string[] {
    return [...this.#ctx.active.keys()];
  }

  /** Runs this instance admits at once now (MAX_ACTIVE_RUNS, fewer while its event loop runs late); null without admission. */
  get admissionLimit(): number | null {
    return this.#limit?.current() ?? null;
  }

  /** Runs executing here now: the active ones but those back in the queue after a 503 (counted in queuedHere). */
  get executingHere(): number {
    return this.#ctx.active.size - this.#ctx.held.size;
  }

  /** Runs this instance queued that no instance has claimed yet (as of its last look), and its runs back in the queue after a 503. */
  get queuedHere(): number {
    return this.#ctx.queuedBy.size + this.#ctx.held.size;
  }

  async begin(handover: RunHandover): Promise<RunRecord> {
    const ctx = this.#ctx;
    const { run } = handover;
    if (run.status === "running") {
      await launchRun(ctx, handover);
      return run;
    }
    ctx.queuedBy.set(run.id, handover.principal);
    ctx.queuedOrigin.set(run.id, handover.origin);
    ctx.announce({ conversationId: run.conversationId, kind: handover.change, at: ctx.now() });
    await this.claimQueued();
    return (await ctx.options.store.getRun(run.id)) ?? run;
  }

  stop(runId: string): Promise<RunRecord | null> | null {
    const active = this.#ctx.active.get(runId);
    if (!active) return null;
    active.controller.abort(new RunAbortReason("cancel"));
    return active.finished;
  }

  finished(runId: string): Promise<RunRecord | null> | null {
    return this.#ctx.active.get(runId)?.finished ?? null;
  }

  forget(runId: string): void {
    this.#ctx.queuedBy.delete(runId);
    this.#ctx.queuedOrigin.delete(runId);
  }

  claimQueued(): Promise<void> {
    return this.#claims.claimQueued();
  }

  /** Stops runs whose rows another process has ended (a cross-process cancel); called on each heartbeat. */
  abortRunsEndedElsewhere(): Promise<void> {
    return abortRunsEndedElsewhere(this.#ctx);
  }

  /**
   * Claims no more runs and aborts the active ones with the shutdown reason;
   * answers their outcomes, each settling once it is recorded. Queued runs stay
   * queued, for another instance or the next start.
   */
  async stopAll(): Promise<Promise<RunRecord | null>[]> {
    this.#accepting = false;
    clearTimeout(this.#pollTimer);
    this.#stopNotices();
    this.#limit?.stop();
    await this.#claims.idle;
    this.#stopListening();
    return abortForShutdown(this.#ctx);
  }
}
