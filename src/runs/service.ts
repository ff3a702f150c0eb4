// The run lifecycle: start, resume (also with answers to interrupts), fork,
// cancel, finish and shutdown (docs/design.md, section 3, "The life of a run").
// The running row is committed before any graph work; the outcome is committed
// before the terminal event is published. Refusals are thrown before anything
// is written.
//
// RunService is a facade over two sides that meet at one seam
// (execution-seam.ts): the API side (start-run.ts, resume-run.ts,
// cancel-run.ts, fork-conversation.ts, edit-state.ts) validates, records and
// hands runs over; the execution side (execution/) claims, executes, records
// outcomes and stops runs.
import type { ConversationRecord, RunRecord } from "../domain/records.ts";
import type { Principal } from "../domain/principal.ts";
import { RunTelemetry } from "../telemetry/run-telemetry.ts";
import { validateMessage, type ApiContext } from "./api-context.ts";
import { cancelRun } from "./cancel-run.ts";
import { editState } from "./edit-state.ts";
import { RunExecutor } from "./execution/run-executor.ts";
import { forkConversation } from "./fork-conversation.ts";
import type { RunServiceOptions } from "./options.ts";
import { resumeRun, type InterruptResponse } from "./resume-run.ts";
import { startRun, type StartRunRequest } from "./start-run.ts";
import type { WebhookInput } from "../webhooks/url-guard.ts";

export type { RunServiceOptions } from "./options.ts";
export type { InterruptResponse } from "./resume-run.ts";
export { TITLE_MAX_CHARS, titleFromMessage, type Multitask } from "./start-run.ts";
export { forkTitle } from "./fork-conversation.ts";

export class RunService {
  readonly #api: ApiContext;
  readonly #execution: RunExecutor;
  #accepting = true;

  constructor(options: RunServiceOptions) {
    const now = options.now ?? (() => new Date());
    const telemetry = options.telemetry ?? new RunTelemetry();
    this.#execution = new RunExecutor(options, { now, telemetry });
    this.#api = { options, now, telemetry, execution: this.#execution, accepting: () => this.#accepting, editing: new Set() };
  }

  get activeRunIds(): string[] {
    return this.#execution.activeRunIds;
  }

  /** Runs this instance admits at once now (MAX_ACTIVE_RUNS, fewer while its event loop runs late); null without admission. */
  get admissionLimit(): number | null {
    return this.#execution.admissionLimit;
  }

  /** Runs executing here now: the active ones but those back in the queue after a 503 (counted in queuedHere). */
  get executingHere(): number {
    return this.#execution.executingHere;
  }

  /** Runs this instance queued that no instance has claimed yet (as of its last look), and its runs back in the queue after a 503. */
  get queuedHere(): number {
    return this.#execution.queuedHere;
  }

  validateMessage(message: string): string {
    return validateMessage(this.#api, message);
  }

  startRun(input: StartRunRequest, principal: Principal): Promise<{ run: RunRecord; conversation: ConversationRecord }> {
    return startRun(this.#api, input, principal);
  }

  resumeRun(
    input: { conversationId: string; responses?: InterruptResponse[] | null; idempotencyKey?: string | null; webhook?: WebhookInput | null },
    principal: Principal,
  ): Promise<RunRecord> {
    return resumeRun(this.#api, input, principal);
  }

  forkConversation(
    input: { checkpointId: string; message?: string | null; idempotencyKey?: string | null },
    principal: Principal,
  ): Promise<{ conversation: ConversationRecord; run: RunRecord | null }> {
    return forkConversation(this.#api, input, principal);
  }

  editState(
    input: { checkpointId: string; values: unknown; asNode?: string | null; idempotencyKey?: string | null },
    principal: Principal,
  ): Promise<{ conversation: ConversationRecord; run: RunRecord }> {
    return editState(this.#api, input, principal);
  }

  cancelRun(input: { runId: string; idempotencyKey?: string | null }, principal: Principal): Promise<RunRecord> {
    return cancelRun(this.#api, input, principal);
  }

  /** Stops runs whose rows another process has ended (a cross-process cancel). */
  abortRunsEndedElsewhere(): Promise<void> {
    return this.#execution.abortRunsEndedElsewhere();
  }

  /** Waits until the run's outcome is committed (tests and shutdown). */
  async whenFinished(runId: string): Promise<void> {
    await this.#execution.finished(runId);
  }

  /** Refuses new runs, aborts the active ones and waits until each is recorded `interrupted`. */
  async shutdown(timeoutMs: number): Promise<void> {
    this.#accepting = false;
    // Queued runs stay queued, for another instance or the next start.
    const pending = await this.#execution.stopAll();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...pending, ...this.#api.editing]),
      new Promise((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
  }

  /**
   * Claims what queued runs this instance has room for and executes them. Calls
   * while a claim is under way share it, and one more follows it, so a run
   * queued meanwhile is looked at.
   */
  claimQueued(): Promise<void> {
    return this.#execution.claimQueued();
  }
}
