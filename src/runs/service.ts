// The run lifecycle: start, resume, cancel, finish and shutdown (DESIGN section 3).
// The running row is committed before any graph work; the outcome is committed
// before the terminal event is published.
import { randomUUID } from "node:crypto";
import type { AgentRuntime } from "../agent/runtime.ts";
import type { ModelTransportReport } from "../agent/model-fetch.ts";
import type { RunEventBody } from "../domain/events.ts";
import type { ConversationChange } from "../domain/events.ts";
import type { ConversationRecord, RunOutcome, RunRecord } from "../domain/records.ts";
import { NothingToResumeError, NotFoundError, RunInProgressError, RunNotActiveError, ShuttingDownError, ValidationError, requireUuid } from "../domain/errors.ts";
import { mintMark, mintMarkAfter } from "../correlation/marks.ts";
import type { RunStore } from "../storage/run-store/types.ts";
import type { EventBus, RunPublisher } from "../storage/event-bus/types.ts";
import type { Logger } from "../logger.ts";
import { classifyFailure, RunAbortReason, type Classified } from "./classify.ts";

export interface RunServiceOptions {
  store: RunStore;
  bus: EventBus;
  agent: AgentRuntime;
  ownerId: string;
  maxMessageChars: number;
  /** How far behind this instance's clock may be and a run still start (it waits that long); `MAX_CLOCK_SKEW_MS`. */
  maxClockSkewMs: number;
  logger: Logger;
  now?: () => Date;
}

interface ActiveRun {
  conversationId: string;
  controller: AbortController;
  /** Settles once the outcome is committed and the terminal event published. */
  finished: Promise<RunRecord | null>;
}

export const TITLE_MAX_CHARS = 50;

/** The first line of the trimmed message, cut to 50 characters plus "...". */
export function titleFromMessage(message: string): string {
  const firstLine = message.trim().split(/\r?\n/, 1)[0]!.trim();
  const chars = Array.from(firstLine);
  return chars.length > TITLE_MAX_CHARS ? chars.slice(0, TITLE_MAX_CHARS).join("") + "..." : firstLine;
}

export class RunService {
  readonly #active = new Map<string, ActiveRun>();
  readonly #now: () => Date;
  #accepting = true;

  constructor(private readonly options: RunServiceOptions) {
    this.#now = options.now ?? (() => new Date());
    // A cancelRun received by another instance: stop the run if it executes here.
    this.#stopListening = options.bus.onCancelRequest((runId) => this.#active.get(runId)?.controller.abort(new RunAbortReason("cancel")));
  }

  readonly #stopListening: () => void;

  get activeRunIds(): string[] {
    return [...this.#active.keys()];
  }

  validateMessage(message: string): string {
    if (message.trim().length === 0) throw new ValidationError("message must not be blank", "message");
    if (message.length > this.options.maxMessageChars) {
      throw new ValidationError(`message is ${message.length} characters; the limit is ${this.options.maxMessageChars}`, "message");
    }
    if (message.includes("\u0000")) throw new ValidationError("message must not contain NUL characters", "message");
    return message;
  }

  #requireAccepting(): void {
    if (!this.#accepting) throw new ShuttingDownError();
  }

  async startRun(input: { conversationId?: string | null; message: string }): Promise<{ run: RunRecord; conversation: ConversationRecord }> {
    const message = this.validateMessage(input.message);
    if (input.conversationId != null) requireUuid(input.conversationId, "conversationId");
    this.#requireAccepting();
    const conversationId = input.conversationId ?? randomUUID();
    const startMark = input.conversationId == null ? mintMark() : await this.#startMark(conversationId);
    const startedAt = this.#now();
    const result = await this.options.store.startRun(
      { id: randomUUID(), conversationId, kind: "start", input: message, startedAt, startMark, ownerId: this.options.ownerId },
      input.conversationId == null ? { title: titleFromMessage(message) } : undefined,
    );
    await this.#launch(result.run, message, input.conversationId == null ? "created" : "updated");
    return result;
  }

  async resumeRun(input: { conversationId: string }): Promise<RunRecord> {
    requireUuid(input.conversationId, "conversationId");
    this.#requireAccepting();
    const conversation = await this.options.store.getConversation(input.conversationId);
    if (!conversation) throw new NotFoundError("Conversation", input.conversationId);
    const active = await this.options.store.activeRun(conversation.id);
    if (active) throw new RunInProgressError(conversation.id, active.id);
    const thread = await this.options.agent.readThread(conversation.id);
    if (thread.next.length === 0) throw new NothingToResumeError(conversation.id);
    const { run } = await this.options.store.startRun({
      id: randomUUID(),
      conversationId: conversation.id,
      kind: "resume",
      input: null,
      startMark: await this.#startMark(conversation.id),
      startedAt: this.#now(),
      ownerId: this.options.ownerId,
    });
    await this.#launch(run, null, "updated");
    return run;
  }

  async cancelRun(input: { runId: string }): Promise<RunRecord> {
    requireUuid(input.runId, "runId");
    const active = this.#active.get(input.runId);
    if (active) {
      active.controller.abort(new RunAbortReason("cancel"));
      const finished = await active.finished;
      return finished ?? (await this.options.store.getRun(input.runId))!;
    }
    const run = await this.options.store.getRun(input.runId);
    if (!run) throw new NotFoundError("Run", input.runId);
    if (run.status !== "running") throw new RunNotActiveError(run.id, run.status);
    // Owned by another process: record the cancel and ask the owner to stop the
    // work (it also sees the row is no longer running on its next heartbeat).
    const finished = await this.options.store.finishRun(run.id, {
      status: "cancelled",
      errorCode: "CANCELLED",
      errorMessage: new RunAbortReason("cancel").message,
      partialOutput: null,
      finishedAt: this.#now(),
      endMark: mintMark(),
      // The owner knows its real last seq and replaces this when it stops the run;
      // until then a subscriber that asks the database still gets a terminal event.
      lastEventSeq: Math.max(run.lastEventSeq, 1),
      messageCount: null,
    });
    if (!finished) {
      const now = (await this.options.store.getRun(run.id))!;
      throw new RunNotActiveError(now.id, now.status);
    }
    await this.options.bus.requestCancel(run.id).catch((error: unknown) => this.options.logger.warn("cancel request not delivered", { runId: run.id, error }));
    this.#announce({ conversationId: run.conversationId, kind: "updated", at: this.#now() });
    return finished;
  }

  /** Stops runs whose rows another process has ended (a cross-process cancel). */
  async abortRunsEndedElsewhere(): Promise<void> {
    const ended = await this.options.store.notRunning(this.activeRunIds);
    for (const id of ended) this.#active.get(id)?.controller.abort(new RunAbortReason("cancel"));
  }

  /** Waits until the run's outcome is committed (tests and shutdown). */
  async whenFinished(runId: string): Promise<void> {
    await this.#active.get(runId)?.finished;
  }

  /** Refuses new runs, aborts the active ones and waits until each is recorded `interrupted`. */
  async shutdown(timeoutMs: number): Promise<void> {
    this.#accepting = false;
    this.#stopListening();
    const pending = [...this.#active.values()];
    for (const run of pending) run.controller.abort(new RunAbortReason("shutdown"));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(pending.map((r) => r.finished)),
      new Promise((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
  }

  /** A start mark after everything the conversation recorded, even when another instance's clock ran ahead of ours. */
  async #startMark(conversationId: string): Promise<string> {
    return mintMarkAfter(await this.options.store.lastMark(conversationId), this.options.maxClockSkewMs);
  }

  /** Tells conversationsChanged subscribers; a failure to tell them is logged, never a failed request. */
  #announce(change: ConversationChange): void {
    this.options.bus.publishConversationChange(change).catch((error: unknown) => this.options.logger.warn("conversation change not delivered", { error }));
  }

  /** Opens the run's event log, publishes RUNNING and starts the work; resolves once RUNNING can be read from any instance. */
  async #launch(run: RunRecord, message: string | null, change: "created" | "updated"): Promise<void> {
    const { bus, logger } = this.options;
    const controller = new AbortController();
    const events = bus.openRun(run.id, run.conversationId);
    events.publish({ type: "status", status: "running", errorCode: null, errorMessage: null });
    this.#announce({ conversationId: run.conversationId, kind: change, at: this.#now() });
    const finished = this.#execute(run, message, controller, events).catch((error) => {
      logger.error("run could not be recorded", { runId: run.id, error });
      return null;
    });
    this.#active.set(run.id, { conversationId: run.conversationId, controller, finished });
    void finished.finally(() => this.#active.delete(run.id));
    // A subscriber told of the run by this mutation's answer finds its log, on any instance.
    await events.flushed().catch((error: unknown) => logger.warn("run events not yet delivered", { runId: run.id, error }));
  }

  async #execute(run: RunRecord, message: string | null, controller: AbortController, events: RunPublisher): Promise<RunRecord | null> {
    const { agent, store, logger } = this.options;
    const report: ModelTransportReport = { timedOut: false };
    let partial = "";
    let lastSeq = 1;
    let settled = false;
    const publish = (body: RunEventBody) => {
      // An aborted graph may still finish a write in the background; once the
      // outcome is being recorded, late events are dropped, never sent after it.
      if (!settled) lastSeq = events.publish(body).seq;
    };
    const ownCheckpoints = new Set<string>();
    let failure: Classified | null = null;
    try {
      await agent.execute(run.conversationId, message, controller.signal, report, {
        onToken: (text, messageId, node) => {
          partial += text;
          publish({ type: "token", text, messageId, node });
        },
        onToolCall: (toolCallId, name, args) => publish({ type: "toolCall", toolCallId, name, args }),
        onToolResult: (toolCallId, name, content, isError) => publish({ type: "toolResult", toolCallId, name, content, isError }),
        onCheckpoint: (checkpointId) => {
          ownCheckpoints.add(checkpointId);
          publish({ type: "checkpoint", checkpointId, conversationId: run.conversationId });
        },
      });
    } catch (error) {
      failure = classifyFailure(error, controller.signal.reason, report);
    }
    settled = true;
    const endMark = mintMark();
    let messageCount: number | null = null;
    try {
      const thread = await agent.readThread(run.conversationId);
      messageCount = thread.messages.length;
      // A stop (cancel, shutdown) or an error that comes after the graph saved its
      // last checkpoint, with nothing left to run, cut nothing short: the run completed.
      if (failure && thread.next.length === 0 && thread.checkpointId !== null && ownCheckpoints.has(thread.checkpointId)) {
        logger.info("run reached its end before it could be stopped", { runId: run.id, ignored: failure.errorCode });
        failure = null;
      }
    } catch (error) {
      logger.warn("could not read the thread after the run", { runId: run.id, error });
    }
    if (failure) {
      const level = failure.status === "failed" ? "warn" : "info";
      logger[level]("run ended early", { runId: run.id, errorCode: failure.errorCode, errorMessage: failure.errorMessage });
    }
    const outcome: RunOutcome = {
      status: failure?.status ?? "completed",
      errorCode: failure?.errorCode ?? null,
      errorMessage: failure?.errorMessage ?? null,
      partialOutput: failure && partial ? partial : null,
      finishedAt: this.#now(),
      endMark,
      lastEventSeq: lastSeq + 1,
      messageCount,
    };
    const recorded = await store.finishRun(run.id, outcome);
    // Null: another process already ended the row (a cross-process cancel); tell
    // subscribers what the database says, and add to the row what only this
    // process knows.
    let final = recorded ?? (await store.getRun(run.id));
    if (final) {
      const terminal = events.publish({ type: "status", status: final.status, errorCode: final.errorCode, errorMessage: final.errorMessage });
      if (!recorded) {
        await store.completeEndedElsewhere(run.id, { lastEventSeq: terminal.seq, partialOutput: partial || null, endMark });
        final = (await store.getRun(run.id)) ?? final;
      }
      this.#announce({ conversationId: run.conversationId, kind: "updated", at: this.#now() });
      await events.flushed().catch((error: unknown) => logger.warn("run events not delivered", { runId: run.id, error }));
    }
    return final;
  }
}
