// What a conversation store asks the server to do: start a run with a message,
// stop a run, resume the thread (with answers to its interrupts); forking and
// editing are in branch-actions.ts. Each is one mutation with an idempotency key (so the client's
// retries of it are safe), and the run it answers with is handed to the
// store, which follows it. The store lends these a narrow view of itself
// (ActionHost); an answer that comes after the store moved to another
// conversation changes nothing there.
import type { ClientCore, Result } from "./core.js";
import { CANCEL_RUN, RESUME_RUN, START_RUN } from "./documents.js";
import type { JsonValue, Multitask, RunledgerRunFragment } from "./generated.js";
import type { PendingInterrupt } from "./interrupts.js";
import { emptyRun, isTerminal, withRecord, type RunState } from "./run-log.js";
import type { Outgoing } from "./snapshot.js";

export interface SubmitOptions {
  /** What to do when a run is already active: REJECT (the server's default), ENQUEUE, INTERRUPT or ROLLBACK. */
  multitask?: Multitask;
  /** Sent with every attempt of this submit, so a retry never starts a second run. Default: a new random key per submit. */
  idempotencyKey?: string;
  /** The agent of a new conversation (ignored for an existing one, which keeps its own). */
  agent?: string;
}

export interface RespondOptions {
  /** The interrupt answered; may be left out when exactly one waits. */
  interruptId?: string;
  /** Default: a new random key, reused by the retries of this call. */
  idempotencyKey?: string;
}

/** fork()'s options. */
export interface ForkOptions {
  /** A user message: a run starts on the fork at once. */
  message?: string;
  /** Show the fork in this store (default true). */
  open?: boolean;
  /** Default: a new random key, reused by the retries of this call. */
  idempotencyKey?: string;
}

/** edit()'s input: what to write at which checkpoint. */
export interface EditInput {
  /** The checkpoint edited: the new checkpoint's parent (a past one branches the thread there). */
  checkpointId: string;
  /** Channel values by name, applied through each channel's reducer (a message with an existing id replaces it). */
  values?: { [channel: string]: JsonValue };
  /**
   * Replaces the user message the checkpoint added (its last message, which
   * must be a USER one) with this text, as the graph's input: values
   * `{messages: [{id, role: "USER", content: message}]}` as node `__start__`.
   * resume() then answers it again.
   */
  message?: string;
  /** Write the values as this node did (`__start__`: as the graph's input). Default: LangGraph's choice; `__start__` with `message`. */
  asNode?: string;
  /** Default: a new random key, reused by the retries of this call. */
  idempotencyKey?: string;
}

export function newKey(): string {
  const crypto = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (crypto?.randomUUID) return crypto.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}-${Math.random().toString(36).slice(2)}`;
}

/** What the actions see of their store. */
export interface ActionHost {
  readonly core: ClientCore;
  /** The conversation shown; null for a new one. */
  conversationId(): string | null;
  /** Changes when the store moves to another conversation (or detaches): an answer from before lands nowhere. */
  generation(): number;
  /** The run as the store holds it, if it does. */
  runState(runId: string): RunState | null;
  /** The newest run the store holds. */
  newestRunId(): string | null;
  /** A run an answer named: held (with its record) and followed from its last seq. */
  follow(record: RunledgerRunFragment): RunState;
  /** A run's record as an answer gave it (one that ended is read back); followed too when `follow`. */
  record(record: RunledgerRunFragment, follow: boolean): RunState;
  /** A message's first run made the conversation: the store now follows it. */
  created(conversationId: string): void;
  /** Changes a message sent from the store (its run, or why it was not sent). */
  sent(outgoing: Outgoing, patch: Partial<Outgoing>): void;
  /** A message's run: held, followed, and its resume point kept. */
  followSent(record: RunledgerRunFragment): void;
  /** What the thread waits for now, every change told first. */
  pendingInterrupts(): readonly PendingInterrupt[];
  /** Reads the conversation again. */
  read(): void;
  /** Shows another conversation. */
  open(conversationId: string): void;
  publish(): void;
}

/**
 * startRun with a message sent from the store, with its idempotency key (so
 * the client's retries of it start one run at most): the first one makes the
 * conversation. A refusal marks the message `unsent`, with the reason.
 */
export async function sendMessage(host: ActionHost, outgoing: Outgoing): Promise<Result<{ conversationId: string; runId: string }>> {
  const gen = host.generation();
  const id = host.conversationId();
  const { multitask, agent } = outgoing.options;
  const input = {
    message: outgoing.content,
    idempotencyKey: outgoing.key,
    ...(id ? { conversationId: id } : {}),
    ...(multitask ? { multitask } : {}),
    ...(agent ? { agent } : {}),
  };
  const outcome = await host.core.mutate(START_RUN, { input }, "startRun");
  // The store moved to another conversation meanwhile: nothing of this one lands here.
  if (gen !== host.generation())
    return outcome.ok ? { ok: true, value: { conversationId: outcome.value.conversation.id, runId: outcome.value.run.id } } : outcome;
  if (!outcome.ok) {
    host.sent(outgoing, { state: "unsent", error: { code: outcome.error.code, message: outcome.error.message } });
    host.publish();
    return outcome;
  }
  const { run, conversation } = outcome.value;
  if (host.conversationId() === null) host.created(conversation.id);
  host.sent(outgoing, { runId: run.id });
  host.followSent(run);
  host.publish();
  return { ok: true, value: { conversationId: conversation.id, runId: run.id } };
}

/** Cancels the run on the server (the newest, or `runId`); its stream then ends CANCELLED. */
export async function stopRun(host: ActionHost, runId?: string): Promise<Result<RunState>> {
  const target = runId ?? host.newestRunId();
  const held = target ? host.runState(target) : null;
  if (!target || (held && isTerminal(held.status) && held.lastSeq > 0)) {
    return { ok: false, error: { code: "RUN_NOT_ACTIVE", message: "no run to stop" } };
  }
  const gen = host.generation();
  const outcome = await host.core.mutate(CANCEL_RUN, { input: { runId: target, idempotencyKey: newKey() } }, "cancelRun");
  if (!outcome.ok) return outcome;
  if (gen === host.generation()) host.record(outcome.value.run, false);
  return { ok: true, value: host.runState(target) ?? withRecord(emptyRun(target), outcome.value.run) };
}

/** resumeRun: the thread's pending step, with answers to its interrupts if given; the run that continues is followed. */
export async function resumeThread(
  host: ActionHost,
  input: { responses?: { interruptId: string; value: JsonValue }[]; idempotencyKey: string },
): Promise<Result<RunState>> {
  const id = host.conversationId();
  if (!id) return { ok: false, error: { code: "NOT_FOUND", message: "no conversation yet" } };
  const gen = host.generation();
  const outcome = await host.core.mutate(RESUME_RUN, { input: { conversationId: id, ...input } }, "resumeRun");
  if (!outcome.ok) return outcome;
  if (gen !== host.generation()) return { ok: true, value: withRecord(emptyRun(outcome.value.run.id), outcome.value.run) };
  const run = host.follow(outcome.value.run);
  host.read();
  host.publish();
  return { ok: true, value: run };
}
