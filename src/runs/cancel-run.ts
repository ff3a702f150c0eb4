// Cancelling a run (docs/design.md, section 3, "Cancel"): one that executes on
// this instance is stopped through the execution side, which records the
// outcome; a queued one ends here at once; one another process executes is
// recorded cancelled here and its owner is asked to stop the work.
import type { RunRecord } from "../domain/records.ts";
import { NotFoundError, RunNotActiveError, requireUuid } from "../domain/errors.ts";
import { canSee, type Principal } from "../domain/principal.ts";
import { mintMark } from "../correlation/index.ts";
import { IdempotencyKeyTakenError } from "../storage/run-store/types.ts";
import { announce, type ApiContext } from "./api-context.ts";
import { RunAbortReason } from "./classify.ts";
import { callKey, replay } from "./idempotent-replay.ts";
import { threadMessageCounts } from "./message-counts.ts";

export async function cancelRun(ctx: ApiContext, input: { runId: string; idempotencyKey?: string | null }, principal: Principal): Promise<RunRecord> {
  requireUuid(input.runId, "runId");
  const key = callKey(ctx, input.idempotencyKey, "cancelRun", { runId: input.runId.toLowerCase() }, principal);
  if (key) {
    const replayed = await replay(ctx, key, principal, () => new NotFoundError("Run", input.runId));
    if (replayed) return replayed.run!;
  }
  const cancelled = await cancelActiveRun(ctx, input, principal);
  if (key) {
    await ctx.options.store.recordIdempotencyKey({ ...key, conversationId: cancelled.conversationId, runId: cancelled.id }).catch((error: unknown) => {
      if (!(error instanceof IdempotencyKeyTakenError)) throw error;
    });
  }
  return cancelled;
}

/** Cancels a queued or running run the principal may see; RunNotActiveError for one that already ended. */
export async function cancelActiveRun(ctx: ApiContext, input: { runId: string }, principal: Principal): Promise<RunRecord> {
  const { store, checkpointReads, bus, logger } = ctx.options;
  const run = await store.getRun(input.runId);
  // Another user's run is one that does not exist.
  if (!run || !canSee(principal, (await store.getConversation(run.conversationId)) ?? { owner: null })) throw new NotFoundError("Run", input.runId);
  const stopping = ctx.execution.stop(input.runId);
  if (stopping) {
    const finished = await stopping;
    return finished ?? (await store.getRun(input.runId))!;
  }
  if (run.status !== "running" && run.status !== "queued") throw new RunNotActiveError(run.id, run.status);
  // Queued, it ends here at once. Owned by another process (or claimed by one
  // meanwhile): record the cancel and ask the owner to stop the work (it also
  // sees the row is no longer running on its next heartbeat).
  // The thread is counted as found; the owner records its own count once stopped.
  const counts = await threadMessageCounts(checkpointReads, [run.conversationId]);
  const finished = await store.finishRun(run.id, {
    status: "cancelled",
    errorCode: "CANCELLED",
    errorMessage: new RunAbortReason("cancel").message,
    partialOutput: null,
    finishedAt: ctx.now(),
    endMark: mintMark(),
    // The owner knows its real last seq and usage and replaces these when it stops
    // the run; until then a subscriber that asks the database still gets a terminal event.
    lastEventSeq: Math.max(run.lastEventSeq, 1),
    messageCount: counts.get(run.conversationId) ?? null,
    usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0, timeToFirstTokenMs: null, modelDurationMs: 0 },
    interrupts: [],
  });
  if (!finished) {
    const now = (await store.getRun(run.id))!;
    throw new RunNotActiveError(now.id, now.status);
  }
  ctx.execution.forget(run.id);
  await bus.requestCancel(run.id).catch((error: unknown) => logger.warn("cancel request not delivered", { runId: run.id, error }));
  announce(ctx, { conversationId: run.conversationId, kind: "updated", at: ctx.now() });
  // A run waiting behind this one (ENQUEUE) may go now.
  if (run.status === "queued") void ctx.execution.claimQueued();
  return finished;
}
