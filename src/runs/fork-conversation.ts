// Forking: a new conversation whose thread is a copy of another's up to one of
// its checkpoints, optionally with a first run on it. The source is untouched.
import { randomUUID } from "node:crypto";
import type { ConversationRecord, NewIdempotencyKey, RunRecord } from "../domain/records.ts";
import { NotFoundError, requireUuid } from "../domain/errors.ts";
import { canSee, type Principal } from "../domain/principal.ts";
import { mintMark } from "../correlation/index.ts";
import { IdempotencyKeyTakenError } from "../storage/run-store/types.ts";
import { announce, handOver, newRun, quotaOf, requireAccepting, requireAgent, validateMessage, type ApiContext } from "./api-context.ts";
import { callKey, replay } from "./idempotent-replay.ts";

/** A fork's title: its source's, marked. */
export function forkTitle(source: string): string {
  return `${source} (fork)`;
}

/**
 * A new conversation whose thread is a copy of the source thread up to and
 * including `checkpointId`; with a message, a run starts on it at once. The
 * source is untouched.
 */
export async function forkConversation(
  ctx: ApiContext,
  input: { checkpointId: string; message?: string | null; idempotencyKey?: string | null },
  principal: Principal,
): Promise<{ conversation: ConversationRecord; run: RunRecord | null }> {
  requireUuid(input.checkpointId, "checkpointId");
  const message = input.message == null ? null : validateMessage(ctx, input.message);
  const key = callKey(ctx, input.idempotencyKey, "forkConversation", { checkpointId: input.checkpointId.toLowerCase(), message }, principal);
  const missing = () => new NotFoundError("Checkpoint", input.checkpointId);
  if (key) {
    const replayed = await replayFork(ctx, key, principal, missing);
    if (replayed) return replayed;
  }
  requireAccepting(ctx);
  try {
    return await fork(ctx, input.checkpointId, message, principal, key);
  } catch (error) {
    if (!(error instanceof IdempotencyKeyTakenError) || !key) throw error;
    const replayed = await replayFork(ctx, key, principal, missing);
    if (!replayed) throw error;
    return replayed;
  }
}

/** A fork's replay: the fork is the caller's own, but the checkpoint it was made from must still be visible, as for a new call. */
async function replayFork(ctx: ApiContext, key: NewIdempotencyKey, principal: Principal, missing: () => NotFoundError) {
  const replayed = await replay(ctx, key, principal, missing);
  if (!replayed) return null;
  const source = replayed.conversation.forkedFromConversationId;
  const from = source ? await ctx.options.store.getConversation(source) : null;
  if (!from || !canSee(principal, from)) throw missing();
  return replayed;
}

async function fork(
  ctx: ApiContext,
  checkpointId: string,
  message: string | null,
  principal: Principal,
  key: NewIdempotencyKey | null,
): Promise<{ conversation: ConversationRecord; run: RunRecord | null }> {
  const { store, checkpointReads, agent: runtime, maxForkCheckpoints } = ctx.options;
  const [checkpoint] = await checkpointReads.checkpointsByIds([checkpointId.toLowerCase()]);
  if (!checkpoint) throw new NotFoundError("Checkpoint", checkpointId);
  const source = await store.getConversation(checkpoint.threadId);
  // Another user's checkpoint is one that does not exist; the fork belongs to whoever forks.
  if (!source || !canSee(principal, source)) throw new NotFoundError("Checkpoint", checkpointId);
  const agent = requireAgent(ctx, source.agent, source);
  const conversationId = randomUUID();
  // A fork counts as a write (with a message, as its run; without, it is held to QUOTA_RUNS_PER_MINUTE alone):
  // a caller at its quota is refused before the copy it would waste. The insert's own check is the one that holds.
  const quota = quotaOf(ctx, principal);
  const forkQuota = quota && message === null ? { ...quota, activeRuns: 0 } : quota;
  if (forkQuota) await store.checkQuota(principal.id, forkQuota, ctx.now());
  // The copy first: a crash before the row leaves an unreferenced thread, never a conversation without its history.
  const { head, messageCount } = await runtime.copyThread(source.id, checkpoint.id, conversationId, agent, maxForkCheckpoints);
  // The insert refused (the quota, after a write of the caller's that came between; a retry's key): the copy goes too.
  const dropCopy = async (error: unknown): Promise<never> => {
    await store.rollBackThread(conversationId, null).catch(() => {});
    throw error;
  };
  const forked = {
    title: forkTitle(source.title),
    agent,
    forkedFrom: { conversationId: source.id, checkpointId: checkpoint.id },
    messageCount,
    owner: principal.id,
  };
  if (message === null) {
    const conversation = await store.createConversation(conversationId, forked, ctx.now(), forkQuota).catch(dropCopy);
    if (key) {
      try {
        await store.recordIdempotencyKey({ ...key, conversationId, runId: null });
      } catch (error) {
        // A retry racing this call recorded the key first: this fork is the extra one.
        await store.deleteConversation(conversationId).catch(() => {});
        throw error;
      }
    }
    announce(ctx, { conversationId, kind: "created", at: ctx.now() });
    return { conversation, run: null };
  }
  const result = await store
    .startRun({ ...newRun(ctx, conversationId, "start", message, mintMark(), head, principal, agent), idempotency: key ?? undefined }, forked)
    .catch(dropCopy);
  return { ...result, run: await handOver(ctx, result.run, agent, { kind: "message", text: message }, "created", principal) };
}
