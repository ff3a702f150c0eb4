// The public actions of a conversation store, each one mutation (see
// conversation-actions.ts, and branch-actions.ts, loaded on a first fork or
// edit), kept apart from the store's following and reads (conversation.ts).
// The store hands them its ActionHost.
import { newKey, resumeThread, stopRun, type ActionHost, type EditInput, type ForkOptions, type RespondOptions } from "./conversation-actions.js";
import type { Result } from "./core.js";
import type { JsonValue } from "./generated.js";
import type { InterruptAnswer } from "./interrupts.js";
import type { RunState } from "./run-log.js";

/** branch-actions.ts, loaded on the first fork or edit; a load that fails is a NETWORK error, as a request that fails is. */
function withBranch<T>(use: (branch: typeof import("./branch-actions.js")) => Promise<Result<T>>): Promise<Result<T>> {
  return import("./branch-actions.js").then(use, (error: Error) => ({
    ok: false as const,
    error: { code: "NETWORK", message: `could not load the fork and edit actions: ${error.message}` },
  }));
}

export abstract class ConversationActions {
  /** What the actions see of the store. */
  protected abstract actions(): ActionHost;

  /** Cancels the run on the server (the newest active one, or `runId`); its stream then ends CANCELLED. */
  stop(runId?: string): Promise<Result<RunState>> {
    return stopRun(this.actions(), runId);
  }

  /**
   * Answers the interrupt the thread waits on (resumeRun with responses); the
   * run that continues is followed. Typed for tool approvals and tools in
   * doubt (AnswerTo<I>), any JSON for a graph's own question.
   */
  async respond(value: InterruptAnswer, options: RespondOptions = {}): Promise<Result<RunState>> {
    const pending = this.actions().pendingInterrupts();
    const interruptId = options.interruptId ?? (pending.length === 1 ? pending[0]!.id : undefined);
    if (!interruptId) return { ok: false, error: { code: "VALIDATION", message: `name the interrupt answered: ${pending.length} wait` } };
    return this.respondAll([{ interruptId, value }], options.idempotencyKey);
  }

  /** Answers several interrupts at once: a thread that waits on more than one takes all its answers in one resume. */
  respondAll(responses: { interruptId: string; value: InterruptAnswer }[], idempotencyKey = newKey()): Promise<Result<RunState>> {
    return resumeThread(this.actions(), { responses: responses.map((r) => ({ interruptId: r.interruptId, value: r.value as JsonValue })), idempotencyKey });
  }

  /** Continues the thread's pending step (after a failure, a cancel, an interruption or an edit). */
  resume(idempotencyKey = newKey()): Promise<Result<RunState>> {
    return resumeThread(this.actions(), { idempotencyKey });
  }

  /**
   * Forks the thread at a checkpoint into a new conversation (with a message,
   * a run starts on it at once). By default the store then shows the fork.
   */
  fork(checkpointId: string, options?: ForkOptions): Promise<Result<{ conversationId: string; runId: string | null }>>;
  /** @deprecated fork(checkpointId, {message, open, idempotencyKey}). */
  fork(
    checkpointId: string,
    message: string | undefined,
    options?: Omit<ForkOptions, "message">,
  ): Promise<Result<{ conversationId: string; runId: string | null }>>;
  fork(
    checkpointId: string,
    second?: ForkOptions | string,
    third: Omit<ForkOptions, "message"> = {},
  ): Promise<Result<{ conversationId: string; runId: string | null }>> {
    const host = this.actions();
    return withBranch((branch) => branch.forkThread(host, checkpointId, branch.forkOptions(second, third)));
  }

  /**
   * Writes into the thread at a checkpoint (editState): `values`, as node
   * `asNode` would have (`__start__`: as the graph's input), or `message`,
   * which replaces the user message the checkpoint added. An EDIT run: a
   * past checkpoint branches the thread there; resume() runs on from the edit.
   */
  edit(input: EditInput): Promise<Result<{ run: RunState; checkpointId: string | null }>>;
  /** @deprecated edit({checkpointId, values, asNode, idempotencyKey}). */
  edit(
    checkpointId: string,
    values: { [channel: string]: JsonValue },
    asNode?: string,
    options?: { idempotencyKey?: string },
  ): Promise<Result<{ run: RunState; checkpointId: string | null }>>;
  edit(
    first: EditInput | string,
    values?: { [channel: string]: JsonValue },
    asNode?: string,
    options: { idempotencyKey?: string } = {},
  ): Promise<Result<{ run: RunState; checkpointId: string | null }>> {
    const host = this.actions();
    const generation = host.generation();
    return withBranch((branch) => branch.editThread(host, branch.editInput(first, values, asNode, options), generation));
  }
}
