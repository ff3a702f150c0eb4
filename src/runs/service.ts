// The run lifecycle: start, resume (also with answers to interrupts), fork,
// cancel, finish and shutdown (docs/design.md, section 3, "The life of a run").
// The running row is committed before any graph work; the outcome is committed
// before the terminal event is published. Refusals are thrown before anything
// is written.
import { randomUUID } from "node:crypto";
import type { AgentRuntime, PendingInterrupt, RunInput } from "../agent/runtime.ts";
import { approvalAnswerProblem, isToolApprovalRequest } from "../agent/chat-graph.ts";
import { inDoubtAnswerProblem, isToolInDoubtRequest } from "../agent/tool-journal.ts";
import { DEFAULT_AGENT } from "../agent/definitions.ts";
import type { ModelTransportReport } from "../agent/model-fetch.ts";
import type { ConversationChange, RunEventBody } from "../domain/events.ts";
import type { ConversationRecord, NewRun, RunOutcome, RunRecord, RunUsage } from "../domain/records.ts";
import {
  InterruptMismatchError,
  NothingToResumeError,
  NotFoundError,
  RunInProgressError,
  RunNotActiveError,
  ShuttingDownError,
  ValidationError,
  requireUuid,
} from "../domain/errors.ts";
import { mintMark, mintMarkAfter } from "../correlation/index.ts";
import type { RunStore } from "../storage/run-store/types.ts";
import type { CheckpointReads } from "../storage/checkpoint-reads/types.ts";
import type { ToolJournal } from "../storage/tool-journal/types.ts";
import type { EventBus, RunPublisher } from "../storage/event-bus/types.ts";
import type { Logger } from "../logger.ts";
import { classifyFailure, RunAbortReason, type Classified } from "./classify.ts";
import { threadMessageCounts } from "./message-counts.ts";
import { canSee, type Principal } from "../domain/principal.ts";
import { announceConversationChange } from "./conversation-notices.ts";

export interface RunServiceOptions {
  store: RunStore;
  checkpointReads: CheckpointReads;
  /** Where tool calls are journaled, so one that may have run is never repeated silently. */
  toolJournal: ToolJournal;
  bus: EventBus;
  agent: AgentRuntime;
  ownerId: string;
  maxMessageChars: number;
  /** How far behind this instance's clock may be and a run still start (it waits that long); `MAX_CLOCK_SKEW_MS`. */
  maxClockSkewMs: number;
  logger: Logger;
  /** Per-principal quotas (QUOTA_ACTIVE_RUNS, QUOTA_RUNS_PER_MINUTE; 0 is no limit), for admins too when `admins` (QUOTA_ADMINS). */
  quotas?: { activeRuns: number; runsPerMinute: number; admins: boolean };
  now?: () => Date;
}

interface ActiveRun {
  conversationId: string;
  controller: AbortController;
  /** Settles once the outcome is committed and the terminal event published. */
  finished: Promise<RunRecord | null>;
}

/** An answer to one pending interrupt, as resumeRun receives it. */
export interface InterruptResponse {
  interruptId: string;
  value: unknown;
}

export const TITLE_MAX_CHARS = 50;

/** The first line of the trimmed message, cut to 50 characters plus "...". */
export function titleFromMessage(message: string): string {
  const firstLine = message.trim().split(/\r?\n/, 1)[0]!.trim();
  const chars = Array.from(firstLine);
  return chars.length > TITLE_MAX_CHARS ? chars.slice(0, TITLE_MAX_CHARS).join("") + "..." : firstLine;
}

/** A fork's title: its source's, marked. */
export function forkTitle(source: string): string {
  return `${source} (fork)`;
}

export class RunService {
  readonly #active = new Map<string, ActiveRun>();
  readonly #now: () => Date;
  readonly #stopListening: () => void;
  #accepting = true;

  constructor(private readonly options: RunServiceOptions) {
    this.#now = options.now ?? (() => new Date());
    // A cancelRun received by another instance: stop the run if it executes here.
    this.#stopListening = options.bus.onCancelRequest((runId) => this.#active.get(runId)?.controller.abort(new RunAbortReason("cancel")));
  }

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

  /** The agent a run may use: configured, and the conversation's own when there is one. */
  #requireAgent(name: string, conversation?: ConversationRecord): string {
    if (conversation && name !== conversation.agent) {
      throw new ValidationError(
        `conversation ${conversation.id} runs agent ${JSON.stringify(conversation.agent)}; a conversation keeps the agent it started with`,
        "agent",
      );
    }
    if (!this.options.agent.agent(name)) {
      const known = this.options.agent
        .agents()
        .map((a) => a.definition.name)
        .join(", ");
      throw new ValidationError(
        conversation
          ? `agent ${JSON.stringify(name)} of conversation ${conversation.id} is no longer configured (agents: ${known})`
          : `agent ${JSON.stringify(name)} is not configured (agents: ${known})`,
        "agent",
      );
    }
    return name;
  }

  /** The conversation, when the principal may see it; NotFoundError otherwise, exactly as for one that does not exist. */
  async #visibleConversation(id: string, principal: Principal): Promise<ConversationRecord> {
    const conversation = await this.options.store.getConversation(id);
    if (!conversation || !canSee(principal, conversation)) throw new NotFoundError("Conversation", id);
    return conversation;
  }

  async startRun(
    input: { conversationId?: string | null; message: string; agent?: string | null },
    principal: Principal,
  ): Promise<{ run: RunRecord; conversation: ConversationRecord }> {
    const message = this.validateMessage(input.message);
    if (input.conversationId != null) requireUuid(input.conversationId, "conversationId");
    this.#requireAccepting();
    if (input.conversationId == null) {
      const agent = this.#requireAgent(input.agent ?? DEFAULT_AGENT);
      const conversationId = randomUUID();
      const result = await this.options.store.startRun(this.#newRun(conversationId, "start", message, mintMark(), null, principal), {
        title: titleFromMessage(message),
        agent,
        owner: principal.id,
      });
      await this.#launch(result.run, agent, { kind: "message", text: message }, "created", principal);
      return result;
    }
    const conversation = await this.#visibleConversation(input.conversationId, principal);
    const agent = this.#requireAgent(input.agent ?? conversation.agent, conversation);
    const [startMark, head] = await this.#startPoint(conversation.id);
    const result = await this.options.store.startRun(this.#newRun(conversation.id, "start", message, startMark, head, principal));
    await this.#launch(result.run, agent, { kind: "message", text: message }, "updated", principal);
    return result;
  }

  /**
   * Continues the thread: its pending step (after a failure, cancel or
   * interruption), or, with `responses`, the interrupts it waits on. A thread
   * that waits for answers must get one for each pending interrupt and none
   * other (InterruptMismatchError); answers to tool approvals are checked
   * against what each asks (ValidationError).
   */
  async resumeRun(input: { conversationId: string; responses?: InterruptResponse[] | null }, principal: Principal): Promise<RunRecord> {
    requireUuid(input.conversationId, "conversationId");
    this.#requireAccepting();
    const conversation = await this.#visibleConversation(input.conversationId, principal);
    const agent = this.#requireAgent(conversation.agent, conversation);
    const active = await this.options.store.activeRun(conversation.id);
    if (active) throw new RunInProgressError(conversation.id, active.id);
    const thread = await this.options.agent.readThread(conversation.id, agent);
    const responses = input.responses ?? [];
    const answers = this.#checkResponses(conversation.id, thread.interrupts, responses);
    if (!answers && thread.next.length === 0 && thread.interrupts.length === 0) throw new NothingToResumeError(conversation.id);
    const [startMark] = await this.#startPoint(conversation.id);
    const run: NewRun = {
      ...this.#newRun(conversation.id, "resume", null, startMark, thread.checkpointId, principal),
      answers: responses.length ? responses : undefined,
    };
    const { run: started } = await this.options.store.startRun(run);
    await this.#launch(started, agent, answers ? { kind: "answers", answers } : { kind: "continue" }, "updated", principal);
    return started;
  }

  /** The answers by interrupt id, or null for a plain resume; refuses what LangGraph could not use. */
  #checkResponses(conversationId: string, pending: PendingInterrupt[], responses: InterruptResponse[]): Record<string, unknown> | null {
    const pendingIds = pending.map((i) => i.id);
    if (responses.length === 0) {
      if (pending.length) {
        // LangGraph would raise the same interrupts again.
        throw new InterruptMismatchError(
          conversationId,
          pendingIds,
          `conversation ${conversationId} waits for answers to ${pendingIds.length} interrupt(s) (${pendingIds.join(", ")}); resume it with responses`,
        );
      }
      return null;
    }
    if (pending.length === 0) throw new NothingToResumeError(conversationId);
    const answers: Record<string, unknown> = {};
    for (const [i, response] of responses.entries()) {
      if (Object.hasOwn(answers, response.interruptId))
        throw new ValidationError(`responses[${i}]: interrupt ${response.interruptId} is answered twice`, "responses");
      const interrupt = pending.find((p) => p.id === response.interruptId);
      if (!interrupt) {
        throw new InterruptMismatchError(
          conversationId,
          pendingIds,
          `interrupt ${JSON.stringify(response.interruptId)} is not pending on conversation ${conversationId} (pending: ${pendingIds.join(", ")})`,
        );
      }
      if (isToolApprovalRequest(interrupt.value)) {
        const problem = approvalAnswerProblem(interrupt.value, response.value);
        if (problem) throw new ValidationError(`responses[${i}].value: ${problem}`, "responses");
      }
      if (isToolInDoubtRequest(interrupt.value)) {
        const problem = inDoubtAnswerProblem(response.value);
        if (problem) throw new ValidationError(`responses[${i}].value: ${problem}`, "responses");
      }
      answers[response.interruptId] = response.value;
    }
    const unanswered = pendingIds.filter((id) => !Object.hasOwn(answers, id));
    if (unanswered.length) {
      throw new InterruptMismatchError(
        conversationId,
        pendingIds,
        `interrupt(s) ${unanswered.join(", ")} of conversation ${conversationId} are left unanswered; answer every pending interrupt`,
      );
    }
    return answers;
  }

  /**
   * A new conversation whose thread is a copy of the source thread up to and
   * including `checkpointId`; with a message, a run starts on it at once. The
   * source is untouched.
   */
  async forkConversation(
    input: { checkpointId: string; message?: string | null },
    principal: Principal,
  ): Promise<{ conversation: ConversationRecord; run: RunRecord | null }> {
    requireUuid(input.checkpointId, "checkpointId");
    const message = input.message == null ? null : this.validateMessage(input.message);
    this.#requireAccepting();
    const [checkpoint] = await this.options.checkpointReads.checkpointsByIds([input.checkpointId.toLowerCase()]);
    if (!checkpoint) throw new NotFoundError("Checkpoint", input.checkpointId);
    const source = await this.options.store.getConversation(checkpoint.threadId);
    // Another user's checkpoint is one that does not exist; the fork belongs to whoever forks.
    if (!source || !canSee(principal, source)) throw new NotFoundError("Checkpoint", input.checkpointId);
    const agent = this.#requireAgent(source.agent, source);
    const conversationId = randomUUID();
    // The copy first: a crash before the row leaves an unreferenced thread, never a conversation without its history.
    const { head, messageCount } = await this.options.agent.copyThread(source.id, checkpoint.id, conversationId, agent);
    const fork = {
      title: forkTitle(source.title),
      agent,
      forkedFrom: { conversationId: source.id, checkpointId: checkpoint.id },
      messageCount,
      owner: principal.id,
    };
    if (message === null) {
      const conversation = await this.options.store.createConversation(conversationId, fork, this.#now());
      this.#announce({ conversationId, kind: "created", at: this.#now() });
      return { conversation, run: null };
    }
    const result = await this.options.store.startRun(this.#newRun(conversationId, "start", message, mintMark(), head, principal), fork);
    await this.#launch(result.run, agent, { kind: "message", text: message }, "created", principal);
    return result;
  }

  async cancelRun(input: { runId: string }, principal: Principal): Promise<RunRecord> {
    requireUuid(input.runId, "runId");
    const run = await this.options.store.getRun(input.runId);
    // Another user's run is one that does not exist.
    if (!run || !canSee(principal, (await this.options.store.getConversation(run.conversationId)) ?? { owner: null }))
      throw new NotFoundError("Run", input.runId);
    const active = this.#active.get(input.runId);
    if (active) {
      active.controller.abort(new RunAbortReason("cancel"));
      const finished = await active.finished;
      return finished ?? (await this.options.store.getRun(input.runId))!;
    }
    if (run.status !== "running") throw new RunNotActiveError(run.id, run.status);
    // Owned by another process: record the cancel and ask the owner to stop the
    // work (it also sees the row is no longer running on its next heartbeat).
    // The thread is counted as found; the owner records its own count once stopped.
    const counts = await threadMessageCounts(this.options.checkpointReads, [run.conversationId]);
    const finished = await this.options.store.finishRun(run.id, {
      status: "cancelled",
      errorCode: "CANCELLED",
      errorMessage: new RunAbortReason("cancel").message,
      partialOutput: null,
      finishedAt: this.#now(),
      endMark: mintMark(),
      // The owner knows its real last seq and usage and replaces these when it stops
      // the run; until then a subscriber that asks the database still gets a terminal event.
      lastEventSeq: Math.max(run.lastEventSeq, 1),
      messageCount: counts.get(run.conversationId) ?? null,
      usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0, timeToFirstTokenMs: null, modelDurationMs: 0 },
      interrupts: [],
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

  #newRun(
    conversationId: string,
    kind: NewRun["kind"],
    input: string | null,
    startMark: string,
    startCheckpointId: string | null,
    principal: Principal,
  ): NewRun {
    const { quotas } = this.options;
    // Admins are exempt unless QUOTA_ADMINS says otherwise.
    const quota = quotas && (principal.role !== "admin" || quotas.admins) ? { activeRuns: quotas.activeRuns, runsPerMinute: quotas.runsPerMinute } : undefined;
    return {
      id: randomUUID(),
      conversationId,
      kind,
      input,
      startedAt: this.#now(),
      startMark,
      ownerId: this.options.ownerId,
      startCheckpointId,
      startedBy: principal.id,
      quota,
    };
  }

  /**
   * Where a run on an existing conversation starts: a mark after everything the
   * conversation recorded (even when another instance's clock ran ahead of
   * ours), and the thread's head checkpoint.
   */
  async #startPoint(conversationId: string): Promise<[string, string | null]> {
    const [floor, heads] = await Promise.all([this.options.store.lastMark(conversationId), this.options.checkpointReads.heads([conversationId])]);
    return [await mintMarkAfter(floor, this.options.maxClockSkewMs), heads.get(conversationId) ?? null];
  }

  #announce(change: ConversationChange): void {
    announceConversationChange(this.options.bus, this.options.logger, change);
  }

  /** Opens the run's event log, publishes RUNNING and starts the work; resolves once RUNNING can be read from any instance. */
  async #launch(run: RunRecord, agent: string, input: RunInput, change: "created" | "updated", principal: Principal): Promise<void> {
    const { bus, logger } = this.options;
    const controller = new AbortController();
    const events = bus.openRun(run.id, run.conversationId);
    events.publish({ type: "status", status: "running", errorCode: null, errorMessage: null });
    this.#announce({ conversationId: run.conversationId, kind: change, at: this.#now() });
    const finished = this.#execute(run, agent, input, controller, events, principal).catch((error) => {
      logger.error("run could not be recorded", { runId: run.id, error });
      return null;
    });
    this.#active.set(run.id, { conversationId: run.conversationId, controller, finished });
    void finished.finally(() => this.#active.delete(run.id));
    // A subscriber told of the run by this mutation's answer finds its log, on any instance.
    await events.flushed().catch((error: unknown) => logger.warn("run events not yet delivered", { runId: run.id, error }));
  }

  async #execute(
    run: RunRecord,
    agentName: string,
    input: RunInput,
    controller: AbortController,
    events: RunPublisher,
    principal: Principal,
  ): Promise<RunRecord | null> {
    const { agent, store, logger } = this.options;
    const report: ModelTransportReport = { timedOut: false };
    const startedAt = performance.now();
    const usage: RunUsage = { inputTokens: 0, outputTokens: 0, modelCalls: 0, timeToFirstTokenMs: null, modelDurationMs: 0 };
    let durationNs = 0;
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
      await agent.execute({
        agentName,
        conversationId: run.conversationId,
        runId: run.id,
        journal: this.options.toolJournal,
        // Who the run works for: the caller that started or resumed it, never stored in the thread.
        user: { id: principal.id, role: principal.role, claims: principal.claims },
        input,
        signal: controller.signal,
        report,
        hooks: {
          onToken: (text, messageId, node) => {
            usage.timeToFirstTokenMs ??= Math.round(performance.now() - startedAt);
            partial += text;
            publish({ type: "token", text, messageId, node });
          },
          onToolCall: (toolCallId, name, args, attempt) => publish({ type: "toolCall", toolCallId, name, args, attempt }),
          onToolResult: (toolCallId, name, content, isError, attempt) => publish({ type: "toolResult", toolCallId, name, content, isError, attempt }),
          onCheckpoint: (checkpointId) => {
            ownCheckpoints.add(checkpointId);
            publish({ type: "checkpoint", checkpointId, conversationId: run.conversationId });
          },
          onCustom: (name, data) => publish({ type: "custom", name, data }),
          onModelCall: (call) => {
            usage.modelCalls += 1;
            usage.inputTokens += call.inputTokens;
            usage.outputTokens += call.outputTokens;
            durationNs += call.durationNs;
          },
        },
      });
    } catch (error) {
      failure = classifyFailure(error, controller.signal.reason, report);
    }
    settled = true;
    usage.modelDurationMs = Math.round(durationNs / 1e6);
    const endMark = mintMark();
    let messageCount: number | null = null;
    let interrupts: RunOutcome["interrupts"] = [];
    try {
      const thread = await agent.readThread(run.conversationId, agentName);
      messageCount = thread.messages.length;
      // A stop (cancel, shutdown) or an error that comes after the graph saved its
      // last checkpoint, with nothing left to run, cut nothing short: the run completed.
      if (failure && thread.next.length === 0 && thread.interrupts.length === 0 && thread.checkpointId !== null && ownCheckpoints.has(thread.checkpointId)) {
        logger.info("run reached its end before it could be stopped", { runId: run.id, ignored: failure.errorCode });
        failure = null;
      }
      // Paused on interrupt(): waiting for a person, told by the pending tasks (not by next).
      if (!failure) interrupts = thread.interrupts.map(({ id, node, value }) => ({ id, node, value }));
    } catch (error) {
      logger.warn("could not read the thread after the run", { runId: run.id, error });
    }
    if (failure) {
      const level = failure.status === "failed" ? "warn" : "info";
      logger[level]("run ended early", { runId: run.id, errorCode: failure.errorCode, errorMessage: failure.errorMessage });
    }
    const outcome: RunOutcome = {
      status: failure?.status ?? (interrupts.length ? "waiting" : "completed"),
      errorCode: failure?.errorCode ?? null,
      errorMessage: failure?.errorMessage ?? null,
      partialOutput: failure && partial ? partial : null,
      finishedAt: this.#now(),
      endMark,
      lastEventSeq: lastSeq + 1 + interrupts.length,
      messageCount,
      usage,
      interrupts,
    };
    const recorded = await store.finishRun(run.id, outcome);
    // Null: another process already ended the row (a cross-process cancel); tell
    // subscribers what the database says, and add to the row what only this
    // process knows, the usage of the calls it finished included.
    let final = recorded ?? (await store.getRun(run.id));
    if (final) {
      if (recorded) {
        for (const i of interrupts) {
          events.publish({ type: "interrupt", interrupt: { ...i, runId: run.id, conversationId: run.conversationId, createdAt: outcome.finishedAt } });
        }
      }
      if (!recorded) {
        // Committed before the terminal event goes out (whose seq is the next one), like every outcome:
        // a subscriber that reads the run on that event finds the usage and text this process adds.
        await store.completeEndedElsewhere(run.id, { lastEventSeq: lastSeq + 1, partialOutput: partial || null, endMark, usage, messageCount });
        final = (await store.getRun(run.id)) ?? final;
      }
      const terminal = events.publish({ type: "status", status: final.status, errorCode: final.errorCode, errorMessage: final.errorMessage });
      if (!recorded && terminal.seq !== lastSeq + 1)
        logger.warn("terminal event seq differs from the one recorded", { runId: run.id, seq: terminal.seq, recorded: lastSeq + 1 });
      this.#announce({ conversationId: run.conversationId, kind: "updated", at: this.#now() });
      await events.flushed().catch((error: unknown) => logger.warn("run events not delivered", { runId: run.id, error }));
    }
    return final;
  }
}
