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
import { runUserOf } from "../agent/run-user.ts";
import type { ModelTransportReport } from "../agent/model-fetch.ts";
import type { ConversationChange, RunEventBody } from "../domain/events.ts";
import type {
  ConversationRecord,
  IdempotencyRecord,
  NewIdempotencyKey,
  NewRun,
  RunOutcome,
  RunQuota,
  RunRecord,
  RunUsage,
  StateEdit,
} from "../domain/records.ts";
import { messageFromJson } from "../agent/message-json.ts";
import {
  IdempotencyKeyReusedError,
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
import type { RunEventStore } from "../storage/run-events/types.ts";
import type { EventBus, RunPublisher } from "../storage/event-bus/types.ts";
import type { Logger } from "../logger.ts";
import { classifyFailure, RunAbortReason, type Classified } from "./classify.ts";
import { StoredEvents } from "./stored-events.ts";
import { threadMessageCounts } from "./message-counts.ts";
import { canSee, queuedRunPrincipal, type Principal } from "../domain/principal.ts";
import { endpointLimits, endpointOf, type AdmissionSettings } from "./admission.ts";
import { createAdaptiveLimit, type AdaptiveLimit } from "./adaptive-limit.ts";
import { checkIdempotencyKey, requestHash } from "./idempotency.ts";
import { IDEMPOTENCY_TTL_MS, IdempotencyKeyTakenError } from "../storage/run-store/types.ts";
import { announceConversationChange } from "./conversation-notices.ts";
import { RunTelemetry, type RunOrigin, type RunWatch } from "../telemetry/run-telemetry.ts";
import { turns } from "../turns.ts";

export interface RunServiceOptions {
  store: RunStore;
  checkpointReads: CheckpointReads;
  /** Where tool calls are journaled, so one that may have run is never repeated silently. */
  toolJournal: ToolJournal;
  /** Where what a run streams that its checkpoints do not keep is stored (custom events, each message's node). */
  runEvents: RunEventStore;
  bus: EventBus;
  agent: AgentRuntime;
  ownerId: string;
  maxMessageChars: number;
  /** The most checkpoints a fork may copy (`MAX_FORK_CHECKPOINTS`); 0 or absent is no limit. */
  maxForkCheckpoints?: number;
  /** How far behind this instance's clock may be and a run still start (it waits that long); `MAX_CLOCK_SKEW_MS`. */
  maxClockSkewMs: number;
  logger: Logger;
  /** Per-principal quotas (QUOTA_ACTIVE_RUNS, QUOTA_RUNS_PER_MINUTE; 0 is no limit), for admins too when `admins` (QUOTA_ADMINS). */
  quotas?: { activeRuns: number; runsPerMinute: number; admins: boolean };
  /** Each run's metrics and span; none by default. */
  telemetry?: RunTelemetry;
  /**
   * Capacity (admission.ts): with it, every run is queued first and executes once
   * this instance claims it with room for it and a slot of its model endpoint.
   * Without it, runs execute at once (embedded uses and store-level tests).
   */
  admission?: AdmissionSettings & {
    /** How often the queue is looked at for runs other instances queued or capacity they freed; default 500 ms. */
    pollMs?: number;
  };
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

/** What startRun does when the conversation has an active run (the GraphQL enum Multitask). */
export type Multitask = "reject" | "enqueue" | "interrupt" | "rollback";

/**
 * How long other instances leave a run to the instance that queued it (which
 * knows its caller fully): long enough that a busy instance's own claim comes
 * first, short beside a queue wait.
 */
const PREFER_OWN_MS = 5_000;

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

/** How many runs this instance queued one look at the queue checks for claims elsewhere. */
const FORGET_SCAN = 200;

export class RunService {
  readonly #active = new Map<string, ActiveRun>();
  /** Edits being written: a shutdown lets them record their outcome before the database closes. */
  readonly #editing = new Set<Promise<unknown>>();
  readonly #now: () => Date;
  readonly #telemetry: RunTelemetry;
  readonly #stopListening: () => void;
  #accepting = true;
  /** The callers of runs this instance queued, for when it claims them itself (claims and a JWT are never stored). */
  readonly #queuedBy = new Map<string, Principal>();
  /** Where the spans of runs this instance queued hang (the request that queued them), for when it claims them itself. */
  readonly #queuedOrigin = new Map<string, RunOrigin>();
  /**
   * Runs paused here at a model call the model answered 503, back in the queue
   * (requeueHeld) until this instance admits them again: `ready` once their
   * backoff is over; `admit` lets the call be sent again.
   */
  readonly #held = new Map<string, { ready: boolean; admit: () => void }>();
  #claiming: Promise<void> | null = null;
  #claimAgain = false;
  #pollTimer: NodeJS.Timeout | undefined;
  /** Runs this instance admits now: MAX_ACTIVE_RUNS, or fewer while its event loop runs late (ADMISSION_LOOP_DELAY_MS). */
  readonly #limit: AdaptiveLimit | undefined;

  constructor(private readonly options: RunServiceOptions) {
    this.#now = options.now ?? (() => new Date());
    this.#telemetry = options.telemetry ?? new RunTelemetry();
    if (options.admission) {
      this.#limit = createAdaptiveLimit({ max: options.admission.maxActiveRuns, targetMs: options.admission.loopDelayTargetMs ?? 0 });
      // Runs queued by other instances, or left queued by a stopped one, and slots freed elsewhere.
      this.#pollTimer = setInterval(() => void this.claimQueued().then(() => this.#forgetClaimedElsewhere()), options.admission.pollMs ?? 500);
      this.#pollTimer.unref();
    }
    // A cancelRun received by another instance: stop the run if it executes here.
    this.#stopListening = options.bus.onCancelRequest((runId) => this.#active.get(runId)?.controller.abort(new RunAbortReason("cancel")));
  }

  get activeRunIds(): string[] {
    return [...this.#active.keys()];
  }

  /** Runs this instance admits at once now (MAX_ACTIVE_RUNS, fewer while its event loop runs late); null without admission. */
  get admissionLimit(): number | null {
    return this.#limit?.current() ?? null;
  }

  /** Runs executing here now: the active ones but those back in the queue after a 503 (counted in queuedHere). */
  get executingHere(): number {
    return this.#active.size - this.#held.size;
  }

  /** Runs this instance queued that no instance has claimed yet (as of its last look), and its runs back in the queue after a 503. */
  get queuedHere(): number {
    return this.#queuedBy.size + this.#held.size;
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
    input: { conversationId?: string | null; message: string; agent?: string | null; multitask?: Multitask | null; idempotencyKey?: string | null },
    principal: Principal,
  ): Promise<{ run: RunRecord; conversation: ConversationRecord }> {
    const message = this.validateMessage(input.message);
    if (input.conversationId != null) requireUuid(input.conversationId, "conversationId");
    const multitask = input.multitask ?? "reject";
    const key = this.#key(
      input.idempotencyKey,
      "startRun",
      { conversationId: input.conversationId ?? null, message, agent: input.agent ?? null, multitask },
      principal,
    );
    // A replay of what the caller cannot see now answers as that id would: missing.
    const missing = () => new NotFoundError("Conversation", input.conversationId ?? "");
    if (key) {
      const replayed = await this.#replay(key, principal, missing);
      if (replayed) return { run: replayed.run!, conversation: replayed.conversation };
    }
    this.#requireAccepting();
    try {
      if (input.conversationId != null && (multitask === "interrupt" || multitask === "rollback"))
        await this.#makeWay(input.conversationId, multitask, principal);
      return await this.#startRun(input, message, principal, key, multitask === "enqueue");
    } catch (error) {
      if (!(error instanceof IdempotencyKeyTakenError) || !key) throw error;
      // A retry racing the first call (on any instance): answer what the first one did.
      const replayed = await this.#replay(key, principal, missing);
      if (!replayed) throw error;
      return { run: replayed.run!, conversation: replayed.conversation };
    }
  }

  /**
   * INTERRUPT and ROLLBACK: the conversation's active run is cancelled (it keeps
   * its partial output), and for ROLLBACK the checkpoints it wrote are dropped,
   * so the new run starts where the cancelled one did. Runs that waited behind
   * it (ENQUEUE) are cancelled first: the new message goes now, not after them.
   */
  async #makeWay(conversationId: string, multitask: "interrupt" | "rollback", principal: Principal): Promise<void> {
    const conversation = await this.#visibleConversation(conversationId, principal);
    const waiting = ((await this.options.store.runsOf([conversation.id])).get(conversation.id) ?? []).filter(
      (r) => r.status === "queued" && r.queueReason === "BEHIND_ACTIVE_RUN",
    );
    for (const run of waiting.reverse()) {
      await this.#cancelRun({ runId: run.id }, principal).catch((error: unknown) => {
        if (!(error instanceof RunNotActiveError)) throw error; // promoted and ended meanwhile
      });
    }
    const active = await this.options.store.activeRun(conversation.id);
    if (!active) return;
    const cancelled = await this.#cancelRun({ runId: active.id }, principal).catch((error: unknown) => {
      if (error instanceof RunNotActiveError) return null; // it ended meanwhile
      throw error;
    });
    if (multitask === "rollback" && cancelled?.status === "cancelled") {
      // A cancel sent to another instance is recorded at once; that instance may still be stopping the graph.
      await this.#waitUntilStopped(cancelled.id);
      await this.options.store.rollBackThread(conversation.id, cancelled.startCheckpointId);
    }
  }

  /**
   * Waits until the cancelled run no longer executes: at once for one of this
   * instance (its cancel waited for it); one of another instance gets the time
   * that instance needs to see the cancel and stop the graph (its next event, or
   * a heartbeat), watched through its log ending.
   */
  async #waitUntilStopped(runId: string): Promise<void> {
    if (this.#active.has(runId)) return void (await this.#active.get(runId)!.finished);
    const log = await this.options.bus.subscribeRun(runId, Number.MAX_SAFE_INTEGER - 1).catch(() => null);
    if (!log) return;
    const timer = setTimeout(() => void log.return?.(), 5_000);
    try {
      while (!(await log.next()).done);
    } catch {
      // The log ended without its terminal event: the instance is gone.
    } finally {
      clearTimeout(timer);
      await log.return?.();
    }
  }

  async #startRun(
    input: { conversationId?: string | null; agent?: string | null },
    message: string,
    principal: Principal,
    key: NewIdempotencyKey | null,
    behind = false,
  ): Promise<{ run: RunRecord; conversation: ConversationRecord }> {
    const idempotency = key ?? undefined;
    if (input.conversationId == null) {
      const agent = this.#requireAgent(input.agent ?? DEFAULT_AGENT);
      const conversationId = randomUUID();
      const result = await this.options.store.startRun(
        { ...this.#newRun(conversationId, "start", message, mintMark(), null, principal, agent), idempotency },
        {
          title: titleFromMessage(message),
          agent,
          owner: principal.id,
        },
      );
      return { ...result, run: await this.#begin(result.run, agent, { kind: "message", text: message }, "created", principal) };
    }
    const conversation = await this.#visibleConversation(input.conversationId, principal);
    const agent = this.#requireAgent(input.agent ?? conversation.agent, conversation);
    const [startMark, head] = await this.#startPoint(conversation.id);
    const result = await this.options.store.startRun({
      ...this.#newRun(conversation.id, "start", message, startMark, head, principal, agent),
      idempotency,
      behind: behind && this.options.admission !== undefined,
    });
    return { ...result, run: await this.#begin(result.run, agent, { kind: "message", text: message }, "updated", principal) };
  }

  /**
   * Continues the thread: its pending step (after a failure, cancel or
   * interruption), or, with `responses`, the interrupts it waits on. A thread
   * that waits for answers must get one for each pending interrupt and none
   * other (InterruptMismatchError); answers to tool approvals are checked
   * against what each asks (ValidationError).
   */
  async resumeRun(
    input: { conversationId: string; responses?: InterruptResponse[] | null; idempotencyKey?: string | null },
    principal: Principal,
  ): Promise<RunRecord> {
    requireUuid(input.conversationId, "conversationId");
    const key = this.#key(input.idempotencyKey, "resumeRun", { conversationId: input.conversationId, responses: input.responses ?? [] }, principal);
    const missing = () => new NotFoundError("Conversation", input.conversationId);
    if (key) {
      const replayed = await this.#replay(key, principal, missing);
      if (replayed) return replayed.run!;
    }
    this.#requireAccepting();
    try {
      return await this.#resumeRun(input, principal, key);
    } catch (error) {
      if (!(error instanceof IdempotencyKeyTakenError) || !key) throw error;
      const replayed = await this.#replay(key, principal, missing);
      if (!replayed) throw error;
      return replayed.run!;
    }
  }

  async #resumeRun(
    input: { conversationId: string; responses?: InterruptResponse[] | null },
    principal: Principal,
    key: NewIdempotencyKey | null,
  ): Promise<RunRecord> {
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
      ...this.#newRun(conversation.id, "resume", null, startMark, thread.checkpointId, principal, agent),
      answers: responses.length ? responses : undefined,
      idempotency: key ?? undefined,
    };
    const { run: started } = await this.options.store.startRun(run);
    return this.#begin(started, agent, answers ? { kind: "answers", answers } : { kind: "continue" }, "updated", principal);
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
    input: { checkpointId: string; message?: string | null; idempotencyKey?: string | null },
    principal: Principal,
  ): Promise<{ conversation: ConversationRecord; run: RunRecord | null }> {
    requireUuid(input.checkpointId, "checkpointId");
    const message = input.message == null ? null : this.validateMessage(input.message);
    const key = this.#key(input.idempotencyKey, "forkConversation", { checkpointId: input.checkpointId.toLowerCase(), message }, principal);
    const missing = () => new NotFoundError("Checkpoint", input.checkpointId);
    if (key) {
      const replayed = await this.#replayFork(key, principal, missing);
      if (replayed) return replayed;
    }
    this.#requireAccepting();
    try {
      return await this.#fork(input.checkpointId, message, principal, key);
    } catch (error) {
      if (!(error instanceof IdempotencyKeyTakenError) || !key) throw error;
      const replayed = await this.#replayFork(key, principal, missing);
      if (!replayed) throw error;
      return replayed;
    }
  }

  /** A fork's replay: the fork is the caller's own, but the checkpoint it was made from must still be visible, as for a new call. */
  async #replayFork(key: NewIdempotencyKey, principal: Principal, missing: () => NotFoundError) {
    const replayed = await this.#replay(key, principal, missing);
    if (!replayed) return null;
    const source = replayed.conversation.forkedFromConversationId;
    const from = source ? await this.options.store.getConversation(source) : null;
    if (!from || !canSee(principal, from)) throw missing();
    return replayed;
  }

  async #fork(
    checkpointId: string,
    message: string | null,
    principal: Principal,
    key: NewIdempotencyKey | null,
  ): Promise<{ conversation: ConversationRecord; run: RunRecord | null }> {
    const [checkpoint] = await this.options.checkpointReads.checkpointsByIds([checkpointId.toLowerCase()]);
    if (!checkpoint) throw new NotFoundError("Checkpoint", checkpointId);
    const source = await this.options.store.getConversation(checkpoint.threadId);
    // Another user's checkpoint is one that does not exist; the fork belongs to whoever forks.
    if (!source || !canSee(principal, source)) throw new NotFoundError("Checkpoint", checkpointId);
    const agent = this.#requireAgent(source.agent, source);
    const conversationId = randomUUID();
    // A fork counts as a write (with a message, as its run; without, it is held to QUOTA_RUNS_PER_MINUTE alone):
    // a caller at its quota is refused before the copy it would waste. The insert's own check is the one that holds.
    const quota = this.#quotaOf(principal);
    const forkQuota = quota && message === null ? { ...quota, activeRuns: 0 } : quota;
    if (forkQuota) await this.options.store.checkQuota(principal.id, forkQuota, this.#now());
    // The copy first: a crash before the row leaves an unreferenced thread, never a conversation without its history.
    const { head, messageCount } = await this.options.agent.copyThread(source.id, checkpoint.id, conversationId, agent, this.options.maxForkCheckpoints);
    // The insert refused (the quota, after a write of the caller's that came between; a retry's key): the copy goes too.
    const dropCopy = async (error: unknown): Promise<never> => {
      await this.options.store.rollBackThread(conversationId, null).catch(() => {});
      throw error;
    };
    const fork = {
      title: forkTitle(source.title),
      agent,
      forkedFrom: { conversationId: source.id, checkpointId: checkpoint.id },
      messageCount,
      owner: principal.id,
    };
    if (message === null) {
      const conversation = await this.options.store.createConversation(conversationId, fork, this.#now(), forkQuota).catch(dropCopy);
      if (key) {
        try {
          await this.options.store.recordIdempotencyKey({ ...key, conversationId, runId: null });
        } catch (error) {
          // A retry racing this call recorded the key first: this fork is the extra one.
          await this.options.store.deleteConversation(conversationId).catch(() => {});
          throw error;
        }
      }
      this.#announce({ conversationId, kind: "created", at: this.#now() });
      return { conversation, run: null };
    }
    const result = await this.options.store
      .startRun({ ...this.#newRun(conversationId, "start", message, mintMark(), head, principal, agent), idempotency: key ?? undefined }, fork)
      .catch(dropCopy);
    return { ...result, run: await this.#begin(result.run, agent, { kind: "message", text: message }, "created", principal) };
  }

  /**
   * Writes `values` into a conversation's thread as a new checkpoint whose
   * parent is `checkpointId` (LangGraph's updateState, as if node `asNode` had
   * written them), recorded as a run of kind `edit`: who, when, what it wrote.
   * The run's window holds the checkpoint it writes, so the correlation gives
   * it to the edit. Bad input is refused before anything is written.
   */
  async editState(
    input: { checkpointId: string; values: unknown; asNode?: string | null; idempotencyKey?: string | null },
    principal: Principal,
  ): Promise<{ conversation: ConversationRecord; run: RunRecord }> {
    requireUuid(input.checkpointId, "checkpointId");
    const values = input.values;
    if (values === null || typeof values !== "object" || Array.isArray(values))
      throw new ValidationError("values must be an object of channel values", "values");
    if (Object.keys(values).length === 0) throw new ValidationError("values must name at least one channel", "values");
    const asNode = input.asNode ?? null;
    if (asNode !== null && asNode.trim().length === 0) throw new ValidationError("asNode must not be blank", "asNode");
    const edit = { values: values as Record<string, unknown>, asNode };
    const key = this.#key(input.idempotencyKey, "editState", { checkpointId: input.checkpointId.toLowerCase(), ...edit }, principal);
    const missing = () => new NotFoundError("Checkpoint", input.checkpointId);
    if (key) {
      const replayed = await this.#replay(key, principal, missing);
      if (replayed?.run) return { conversation: replayed.conversation, run: replayed.run };
    }
    this.#requireAccepting();
    const editing = this.#editState(input.checkpointId.toLowerCase(), edit, principal, key);
    this.#editing.add(editing);
    void editing.catch(() => {}).finally(() => this.#editing.delete(editing));
    try {
      return await editing;
    } catch (error) {
      // A retry racing the first call (on any instance) finds its key taken, or its run already active: answer what the first one did.
      if (!(error instanceof IdempotencyKeyTakenError || error instanceof RunInProgressError) || !key) throw error;
      const replayed = await this.#replay(key, principal, missing);
      if (!replayed?.run) throw error;
      return { conversation: replayed.conversation, run: replayed.run };
    }
  }

  async #editState(
    checkpointId: string,
    edit: StateEdit,
    principal: Principal,
    key: NewIdempotencyKey | null,
  ): Promise<{ conversation: ConversationRecord; run: RunRecord }> {
    const { agent, store, bus, logger } = this.options;
    const [checkpoint] = await this.options.checkpointReads.checkpointsByIds([checkpointId]);
    if (!checkpoint) throw new NotFoundError("Checkpoint", checkpointId);
    const conversation = await store.getConversation(checkpoint.threadId);
    // Another user's checkpoint is one that does not exist.
    if (!conversation || !canSee(principal, conversation)) throw new NotFoundError("Checkpoint", checkpointId);
    const agentName = this.#requireAgent(conversation.agent, conversation);
    const values = this.#editValues(agentName, edit);
    if (edit.asNode !== null && !agent.updateNodes(agentName).includes(edit.asNode)) {
      throw new ValidationError(
        `asNode ${JSON.stringify(edit.asNode)} is not a node of agent ${JSON.stringify(agentName)} (nodes: ${agent.updateNodes(agentName).join(", ")})`,
        "asNode",
      );
    }
    const active = await store.activeRun(conversation.id);
    if (active) throw new RunInProgressError(conversation.id, active.id);
    const [startMark] = await this.#startPoint(conversation.id);
    // An edit calls no model: it is never queued and not held to QUOTA_ACTIVE_RUNS, but it writes a
    // checkpoint, so it counts toward QUOTA_RUNS_PER_MINUTE. The database still allows one active run.
    const quota = this.#quotaOf(principal);
    const { run } = await store.startRun({
      ...this.#newRun(conversation.id, "edit", null, startMark, checkpoint.id, principal, agentName),
      endpoint: null,
      quota: quota && { activeRuns: 0, runsPerMinute: quota.runsPerMinute },
      edit,
      idempotency: key ?? undefined,
    });
    // Counted and traced like any run (kind "edit"), so metrics see every attempt the ledger records.
    const watch = this.#telemetry.start(
      { id: run.id, conversationId: conversation.id, kind: "edit", agent: agentName, queuedAt: null },
      this.#telemetry.origin(),
    );
    const events = bus.openRun(run.id, conversation.id);
    let lastSeq = events.publish({ type: "status", status: "running", errorCode: null, errorMessage: null }).seq;
    this.#announce({ conversationId: conversation.id, kind: "updated", at: this.#now() });
    let failure: string | null = null;
    try {
      const written = await watch.within(() => agent.updateState(conversation.id, agentName, checkpoint.id, values, edit.asNode));
      lastSeq = events.publish({ type: "checkpoint", checkpointId: written, conversationId: conversation.id }).seq;
    } catch (error) {
      failure = error instanceof Error ? error.message : String(error);
      logger.warn("state edit failed", { runId: run.id, error });
    }
    const endMark = mintMark();
    const messageCount = await agent
      .readThread(conversation.id, agentName)
      .then((thread) => thread.messages.length)
      .catch(() => null);
    const recorded = await store.finishRun(run.id, {
      status: failure ? "failed" : "completed",
      errorCode: failure ? "AGENT_FAILURE" : null,
      errorMessage: failure,
      partialOutput: null,
      finishedAt: this.#now(),
      endMark,
      lastEventSeq: lastSeq + 1,
      messageCount,
      usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0, timeToFirstTokenMs: null, modelDurationMs: 0 },
      interrupts: [],
    });
    const final = recorded ?? (await store.getRun(run.id)) ?? run;
    watch.end({ status: final.status, errorCode: final.errorCode });
    events.publish({ type: "status", status: final.status, errorCode: final.errorCode, errorMessage: final.errorMessage });
    this.#announce({ conversationId: conversation.id, kind: "updated", at: this.#now() });
    await events.flushed().catch((error: unknown) => logger.warn("run events not delivered", { runId: run.id, error }));
    return { conversation: (await store.getConversation(conversation.id)) ?? conversation, run: final };
  }

  /** The edit's values as the graph's channels take them: known channels only; messages as the API types them, or as LangChain reads them. */
  #editValues(agentName: string, edit: StateEdit): Record<string, unknown> {
    const channels = this.options.agent.stateChannels(agentName);
    const values: Record<string, unknown> = {};
    for (const [channel, value] of Object.entries(edit.values)) {
      if (!channels.includes(channel)) {
        throw new ValidationError(
          `values.${channel} is not a channel of agent ${JSON.stringify(agentName)}'s state (channels: ${channels.join(", ")})`,
          "values",
        );
      }
      if (channel !== "messages") {
        values[channel] = value;
        continue;
      }
      values[channel] = (Array.isArray(value) ? value : [value]).map((message, i) => {
        try {
          return messageFromJson(message);
        } catch (error) {
          throw new ValidationError(`values.messages[${i}]: ${(error instanceof Error ? error.message : String(error)).split("\n")[0]}`, "values");
        }
      });
    }
    return values;
  }

  async cancelRun(input: { runId: string; idempotencyKey?: string | null }, principal: Principal): Promise<RunRecord> {
    requireUuid(input.runId, "runId");
    const key = this.#key(input.idempotencyKey, "cancelRun", { runId: input.runId.toLowerCase() }, principal);
    if (key) {
      const replayed = await this.#replay(key, principal, () => new NotFoundError("Run", input.runId));
      if (replayed) return replayed.run!;
    }
    const cancelled = await this.#cancelRun(input, principal);
    if (key) {
      await this.options.store.recordIdempotencyKey({ ...key, conversationId: cancelled.conversationId, runId: cancelled.id }).catch((error: unknown) => {
        if (!(error instanceof IdempotencyKeyTakenError)) throw error;
      });
    }
    return cancelled;
  }

  /** The key of a call, checked, with the hash of its input; null without one. */
  #key(
    key: string | null | undefined,
    operation: IdempotencyRecord["operation"],
    input: Record<string, unknown>,
    principal: Principal,
  ): NewIdempotencyKey | null {
    if (key == null) return null;
    return { principal: principal.id, key: checkIdempotencyKey(key), operation, requestHash: requestHash(operation, input), createdAt: this.#now() };
  }

  /**
   * What the key's first call created, for a call with the same key: its
   * conversation and run as they stand now. Null for a key not recorded (or
   * expired, or whose conversation was deleted since); IdempotencyKeyReusedError
   * for a key recorded for another operation or input. What the caller cannot
   * see now (an admin role taken away since) throws `missing()`: the answer the
   * call's own id gets when it does not exist.
   */
  async #replay(
    key: NewIdempotencyKey,
    principal: Principal,
    missing: () => NotFoundError,
  ): Promise<{ conversation: ConversationRecord; run: RunRecord | null } | null> {
    const { store } = this.options;
    const recorded = await store.idempotencyKey(key.principal, key.key, new Date(key.createdAt.getTime() - IDEMPOTENCY_TTL_MS));
    if (!recorded) return null;
    if (recorded.operation !== key.operation || recorded.requestHash !== key.requestHash) throw new IdempotencyKeyReusedError(key.key, recorded.operation);
    const [conversation, run] = await Promise.all([
      recorded.conversationId ? store.getConversation(recorded.conversationId) : null,
      recorded.runId ? store.getRun(recorded.runId) : null,
    ]);
    if (!conversation) return null;
    if (!canSee(principal, conversation)) throw missing();
    return { conversation, run };
  }

  async #cancelRun(input: { runId: string }, principal: Principal): Promise<RunRecord> {
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
    if (run.status !== "running" && run.status !== "queued") throw new RunNotActiveError(run.id, run.status);
    // Queued, it ends here at once. Owned by another process (or claimed by one
    // meanwhile): record the cancel and ask the owner to stop the work (it also
    // sees the row is no longer running on its next heartbeat).
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
    this.#queuedBy.delete(run.id);
    this.#queuedOrigin.delete(run.id);
    await this.options.bus.requestCancel(run.id).catch((error: unknown) => this.options.logger.warn("cancel request not delivered", { runId: run.id, error }));
    this.#announce({ conversationId: run.conversationId, kind: "updated", at: this.#now() });
    // A run waiting behind this one (ENQUEUE) may go now.
    if (run.status === "queued") void this.claimQueued();
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
    // Queued runs stay queued, for another instance or the next start.
    clearInterval(this.#pollTimer);
    this.#limit?.stop();
    await this.#claiming;
    this.#stopListening();
    const pending = [...this.#active.values()];
    for (const run of pending) run.controller.abort(new RunAbortReason("shutdown"));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...pending.map((r) => r.finished), ...this.#editing]),
      new Promise((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
  }

  /** The principal's quotas; none for admins unless QUOTA_ADMINS says otherwise. */
  #quotaOf(principal: Principal): RunQuota | undefined {
    const { quotas } = this.options;
    return quotas && (principal.role !== "admin" || quotas.admins) ? { activeRuns: quotas.activeRuns, runsPerMinute: quotas.runsPerMinute } : undefined;
  }

  #newRun(
    conversationId: string,
    kind: NewRun["kind"],
    input: string | null,
    startMark: string,
    startCheckpointId: string | null,
    principal: Principal,
    agent: string,
  ): NewRun {
    const quota = this.#quotaOf(principal);
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
      startedByRole: principal.role,
      endpoint: this.options.admission ? endpointOf(this.options.agent.agent(agent)!.definition, this.options.admission.ollamaHost) : null,
      traceParent: this.#telemetry.traceParent(),
      quota,
    };
  }

  /**
   * A run just recorded: executed at once without admission; queued otherwise,
   * then a claim, which executes it here when this instance has room and its
   * endpoint a slot (or another instance takes it). Answers the run as it stands.
   */
  async #begin(run: RunRecord, agent: string, input: RunInput, change: "created" | "updated", principal: Principal): Promise<RunRecord> {
    if (run.status === "running") {
      await this.#launch(run, agent, input, change, principal, this.#telemetry.origin());
      return run;
    }
    this.#queuedBy.set(run.id, principal);
    this.#queuedOrigin.set(run.id, this.#telemetry.origin());
    this.#announce({ conversationId: run.conversationId, kind: change, at: this.#now() });
    await this.claimQueued();
    return (await this.options.store.getRun(run.id)) ?? run;
  }

  /**
   * Claims what queued runs this instance has room for and executes them. Calls
   * while a claim is under way share it, and one more follows it, so a run
   * queued meanwhile is looked at.
   */
  claimQueued(): Promise<void> {
    if (!this.options.admission || !this.#accepting) return Promise.resolve();
    if (this.#claiming) {
      this.#claimAgain = true;
      return this.#claiming;
    }
    this.#claiming = (async () => {
      try {
        do {
          this.#claimAgain = false;
          await this.#claimOnce();
        } while (this.#claimAgain && this.#accepting);
      } catch (error) {
        this.options.logger.warn("could not claim queued runs", { error });
      } finally {
        this.#claiming = null;
      }
    })();
    return this.#claiming;
  }

  async #claimOnce(): Promise<void> {
    const admission = this.options.admission!;
    // With no room it still looks: the queued runs' reasons are brought up to date.
    // A paused run holds no room until it is admitted again.
    const room = Math.max(0, this.#limit!.current() - (this.#active.size - this.#held.size));
    const agents = this.options.agent.agents().map((a) => a.definition);
    const ready = [...this.#held].filter(([, held]) => held.ready).map(([id]) => id);
    const claimed = await this.options.store.claimQueued({
      ownerId: this.options.ownerId,
      room,
      endpoints: endpointLimits(agents, admission),
      at: this.#now(),
      own: new Set([...this.#queuedBy.keys(), ...ready]),
      preferOwnMs: PREFER_OWN_MS,
    });
    await Promise.all(
      claimed.map((run) => {
        const held = this.#held.get(run.id);
        if (held) return held.admit();
        // Executing here already, no longer paused (stopped meanwhile): its execution records the outcome.
        if (this.#active.has(run.id)) return;
        return this.#launchClaimed(run);
      }),
    );
  }

  /**
   * Forgets the callers of runs this instance queued that another instance
   * claimed (or that ended). A look reads at most FORGET_SCAN of them, each
   * look the next ones (a run still queued goes to the back), so a long queue
   * never makes one look long.
   */
  async #forgetClaimedElsewhere(): Promise<void> {
    if (this.#queuedBy.size === 0) return;
    const ids: string[] = [];
    for (const id of this.#queuedBy.keys()) {
      ids.push(id);
      if (ids.length === FORGET_SCAN) break;
    }
    const runs = await this.options.store.runs(ids).catch(() => null);
    if (!runs) return;
    for (const id of ids) {
      const principal = this.#queuedBy.get(id);
      if (principal === undefined) continue; // claimed here meanwhile
      const origin = this.#queuedOrigin.get(id);
      this.#queuedBy.delete(id);
      this.#queuedOrigin.delete(id);
      if (runs.get(id)?.status !== "queued") continue;
      this.#queuedBy.set(id, principal);
      if (origin) this.#queuedOrigin.set(id, origin);
    }
  }

  /** Executes a run this instance claimed: its agent and input from the database, its caller as this instance knows it. */
  async #launchClaimed(run: RunRecord): Promise<void> {
    const principal = this.#queuedBy.get(run.id) ?? queuedRunPrincipal(run.startedBy ?? "", run.startedByRole ?? "user");
    this.#queuedBy.delete(run.id);
    // Claimed by another instance than the one that queued it, the run continues the trace its row names.
    const origin = this.#queuedOrigin.get(run.id) ?? this.#telemetry.originFrom(run.traceParent);
    this.#queuedOrigin.delete(run.id);
    const conversation = await this.options.store.getConversation(run.conversationId);
    if (!conversation) return; // deleted meanwhile (only possible once it ended)
    let input: RunInput;
    if (run.kind === "start") input = { kind: "message", text: run.input ?? "" };
    else {
      const answered = ((await this.options.store.interruptsOf([run.conversationId])).get(run.conversationId) ?? []).filter(
        (i) => i.answeredByRunId === run.id,
      );
      input = answered.length ? { kind: "answers", answers: Object.fromEntries(answered.map((i) => [i.id, i.answer])) } : { kind: "continue" };
    }
    await this.#launch(run, conversation.agent, input, "updated", principal, origin);
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

  /**
   * A run that waited behind another (ENQUEUE) was given its start when it was
   * queued; it starts now, after what that run recorded, so its correlation
   * window holds only its own checkpoints.
   */
  async #moveStartPastEarlierRuns(run: RunRecord): Promise<void> {
    if (run.queuedAt === null) return;
    const floor = await this.options.store.lastMark(run.conversationId);
    if (floor === null || floor <= run.startMark) return;
    const [startMark, head] = await this.#startPoint(run.conversationId);
    await this.options.store.moveStart(run.id, startMark, head);
  }

  /**
   * The model answered the run's call 503 (its own queue full): the run goes
   * back to the queue, QUEUED (MODEL_BUSY) and its endpoint slot free, and its
   * graph waits here at that call. After the backoff it takes its turn like
   * any queued run, on this instance (which holds its graph); once admitted it
   * is RUNNING again and the call is sent again. Rejects when the run is stopped.
   */
  async #queueAgain(run: RunRecord, publish: (body: RunEventBody) => void, backoffMs: number, signal: AbortSignal): Promise<void> {
    const requeued = await this.options.store.requeueHeld(run.id, this.options.ownerId, this.#now()).catch((error: unknown) => {
      this.options.logger.warn("a run the model turned away could not go back to the queue; it waits where it is", { runId: run.id, error });
      return false;
    });
    if (!requeued) {
      // Ended by another process (a cancel: its abort is on the way), or the database refused: until then, the backoff.
      await new Promise((resolve) => setTimeout(resolve, backoffMs));
      return;
    }
    publish({ type: "status", status: "queued", errorCode: null, errorMessage: null });
    this.#announce({ conversationId: run.conversationId, kind: "updated", at: this.#now() });
    await new Promise<void>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        this.#held.delete(run.id);
      };
      const onAbort = () => {
        done();
        reject(signal.reason);
      };
      const timer = setTimeout(() => {
        const held = this.#held.get(run.id);
        if (!held) return;
        held.ready = true;
        void this.claimQueued();
      }, backoffMs);
      this.#held.set(run.id, {
        ready: false,
        admit: () => {
          done();
          resolve();
        },
      });
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
      // Its slot is free: the next queued run may go.
      void this.claimQueued();
    });
    publish({ type: "status", status: "running", errorCode: null, errorMessage: null });
    this.#announce({ conversationId: run.conversationId, kind: "updated", at: this.#now() });
  }

  #announce(change: ConversationChange): void {
    announceConversationChange(this.options.bus, this.options.logger, change);
  }

  /** Opens the run's event log, publishes RUNNING and starts the work; resolves once RUNNING can be read from any instance. */
  async #launch(run: RunRecord, agent: string, input: RunInput, change: "created" | "updated", principal: Principal, origin: RunOrigin): Promise<void> {
    const { bus, logger } = this.options;
    const controller = new AbortController();
    const events = bus.openRun(run.id, run.conversationId);
    events.publish({ type: "status", status: "running", errorCode: null, errorMessage: null });
    this.#announce({ conversationId: run.conversationId, kind: change, at: this.#now() });
    const watch = this.#telemetry.start({ id: run.id, conversationId: run.conversationId, kind: run.kind, agent, queuedAt: run.queuedAt }, origin);
    const finished = watch
      .within(() => this.#execute(run, agent, input, controller, events, principal, watch))
      .catch((error) => {
        logger.error("run could not be recorded", { runId: run.id, error });
        return null;
      })
      .then((final) => {
        watch.end(final && { status: final.status, errorCode: final.errorCode });
        return final;
      });
    this.#active.set(run.id, { conversationId: run.conversationId, controller, finished });
    void finished.finally(() => {
      this.#active.delete(run.id);
      // Its room and its endpoint's slot are free: the next queued run may go.
      void this.claimQueued();
    });
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
    watch: RunWatch,
  ): Promise<RunRecord | null> {
    const { agent, store, logger } = this.options;
    const report: ModelTransportReport = { timedOut: false };
    const startedAt = performance.now();
    const usage: RunUsage = { inputTokens: 0, outputTokens: 0, modelCalls: 0, timeToFirstTokenMs: null, modelDurationMs: 0 };
    let durationNs = 0;
    let partial = "";
    let lastSeq = 1;
    let settled = false;
    const stored = new StoredEvents(this.options.runEvents, run.id, logger);
    const publish = (body: RunEventBody) => {
      // An aborted graph may still finish a write in the background; once the
      // outcome is being recorded, late events are dropped, never sent after it.
      if (settled) return;
      const event = events.publish(body);
      lastSeq = event.seq;
      stored.observe(event);
    };
    const ownCheckpoints = new Set<string>();
    let failure: Classified | null = null;
    try {
      // Starting a graph is work of its own: its turn on the loop, not a share of whatever ended the run before it.
      await turns.turn();
      await this.#moveStartPastEarlierRuns(run);
      await agent.execute({
        agentName,
        conversationId: run.conversationId,
        runId: run.id,
        journal: this.options.toolJournal,
        // Who the run works for: the caller that started or resumed it, never stored in the thread.
        user: runUserOf(principal),
        input,
        signal: controller.signal,
        report,
        trace: watch.trace,
        hooks: {
          onToken: (text, messageId, node) => {
            usage.timeToFirstTokenMs ??= Math.round(performance.now() - startedAt);
            watch.token();
            partial += text;
            publish({ type: "token", text, messageId, node });
          },
          onToolCall: (toolCallId, name, args, attempt) => publish({ type: "toolCall", toolCallId, name, args, attempt }),
          onToolResult: (toolCallId, name, content, isError, attempt) => publish({ type: "toolResult", toolCallId, name, content, isError, attempt }),
          onCheckpoint: (checkpointId) => {
            ownCheckpoints.add(checkpointId);
            publish({ type: "checkpoint", checkpointId, conversationId: run.conversationId });
            void stored.flush();
          },
          onCustom: (name, data) => publish({ type: "custom", name, data }),
          // Under admission a busy model sends the run back to the queue, its slot free for others.
          onModelBusy: this.options.admission ? (backoffMs) => this.#queueAgain(run, publish, backoffMs, controller.signal) : undefined,
          onModelCall: (call) => {
            usage.modelCalls += 1;
            usage.inputTokens += call.inputTokens;
            usage.outputTokens += call.outputTokens;
            durationNs += call.durationNs;
            watch.modelCall(call.inputTokens, call.outputTokens);
          },
        },
      });
    } catch (error) {
      failure = classifyFailure(error, controller.signal.reason, report);
    }
    settled = true;
    // Stored before the outcome: whoever reads the terminal status finds them.
    await stored.flush();
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
          watch.interrupt(i.id, i.node);
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
