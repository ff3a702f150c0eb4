// Replaying a call by its idempotency key (idempotency.ts): what the key's first
// call created answers every later call with the same key and input, on any
// instance, for as long as the key is kept.
import type { ConversationRecord, IdempotencyRecord, NewIdempotencyKey, RunRecord } from "../domain/records.ts";
import { IdempotencyKeyReusedError, type NotFoundError } from "../domain/errors.ts";
import { canSee, type Principal } from "../domain/principal.ts";
import { IDEMPOTENCY_TTL_MS } from "../storage/run-store/types.ts";
import type { ApiContext } from "./api-context.ts";
import { checkIdempotencyKey, requestHash } from "./idempotency.ts";

/** The key of a call, checked, with the hash of its input; null without one. */
export function callKey(
  ctx: ApiContext,
  key: string | null | undefined,
  operation: IdempotencyRecord["operation"],
  input: Record<string, unknown>,
  principal: Principal,
): NewIdempotencyKey | null {
  if (key == null) return null;
  return { principal: principal.id, key: checkIdempotencyKey(key), operation, requestHash: requestHash(operation, input), createdAt: ctx.now() };
}

/**
 * What the key's first call created, for a call with the same key: its
 * conversation and run as they stand now. Null for a key not recorded (or
 * expired, or whose conversation was deleted since); IdempotencyKeyReusedError
 * for a key recorded for another operation or input. What the caller cannot
 * see now (an admin role taken away since) throws `missing()`: the answer the
 * call's own id gets when it does not exist.
 */
export async function replay(
  ctx: ApiContext,
  key: NewIdempotencyKey,
  principal: Principal,
  missing: () => NotFoundError,
): Promise<{ conversation: ConversationRecord; run: RunRecord | null } | null> {
  const { store } = ctx.options;
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
