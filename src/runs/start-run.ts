// Starting a run with a new message (docs/design.md, section 3, "A run, step by
// step"): refusals first, then the row (and the conversation, for a new one) in
// one transaction, then the run goes to the execution side. With `multitask`,
// what happens to the conversation's active run.
import { randomUUID } from "node:crypto";
import { DEFAULT_AGENT } from "../agent/definitions.ts";
import type { ConversationRecord, NewIdempotencyKey, RunRecord, WebhookTarget } from "../domain/records.ts";
import { NotFoundError, RunNotActiveError, requireUuid } from "../domain/errors.ts";
import type { Principal } from "../domain/principal.ts";
import { mintMark } from "../correlation/index.ts";
import { IdempotencyKeyTakenError } from "../storage/run-store/types.ts";
import type { WebhookInput } from "../webhooks/url-guard.ts";
import { checkWebhook, handOver, newRun, requireAccepting, requireAgent, validateMessage, visibleConversation, type ApiContext } from "./api-context.ts";
import { cancelActiveRun } from "./cancel-run.ts";
import { callKey, replay } from "./idempotent-replay.ts";
import { startPoint } from "./start-point.ts";

export const TITLE_MAX_CHARS = 50;

/** What startRun does when the conversation has an active run (the GraphQL enum Multitask). */
export type Multitask = "reject" | "enqueue" | "interrupt" | "rollback";

/** The first line of the trimmed message, cut to 50 characters plus "...". */
export function titleFromMessage(message: string): string {
  const firstLine = message.trim().split(/\r?\n/, 1)[0]!.trim();
  const chars = Array.from(firstLine);
  return chars.length > TITLE_MAX_CHARS ? chars.slice(0, TITLE_MAX_CHARS).join("") + "..." : firstLine;
}

/** What startRun takes: the API's StartRunInput, and for a schedule's firing, which firing it is. */
export interface StartRunRequest {
  conversationId?: string | null;
  message: string;
  agent?: string | null;
  multitask?: Multitask | null;
  idempotencyKey?: string | null;
  webhook?: WebhookInput | null;
  /** A schedule's firing: linked to the run in the run's own transaction. */
  firing?: { scheduleId: string; fireAt: Date } | null;
}

export async function startRun(ctx: ApiContext, input: StartRunRequest, principal: Principal): Promise<{ run: RunRecord; conversation: ConversationRecord }> {
  const message = validateMessage(ctx, input.message);
  if (input.conversationId != null) requireUuid(input.conversationId, "conversationId");
  const webhook = checkWebhook(ctx, input.webhook);
  const multitask = input.multitask ?? "reject";
  const key = callKey(
    ctx,
    input.idempotencyKey,
    "startRun",
    // A webhook is part of the call only when given: keys recorded before webhooks still match.
    { conversationId: input.conversationId ?? null, message, agent: input.agent ?? null, multitask, ...(webhook ? { webhook } : {}) },
    principal,
  );
  // A replay of what the caller cannot see now answers as that id would: missing.
  const missing = () => new NotFoundError("Conversation", input.conversationId ?? "");
  if (key) {
    const replayed = await replay(ctx, key, principal, missing);
    if (replayed) return { run: replayed.run!, conversation: replayed.conversation };
  }
  requireAccepting(ctx);
  try {
    if (input.conversationId != null && (multitask === "interrupt" || multitask === "rollback")) await makeWay(ctx, input.conversationId, multitask, principal);
    return await recordStart(ctx, { ...input, webhook }, message, principal, key, multitask === "enqueue");
  } catch (error) {
    if (!(error instanceof IdempotencyKeyTakenError) || !key) throw error;
    // A retry racing the first call (on any instance): answer what the first one did.
    const replayed = await replay(ctx, key, principal, missing);
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
async function makeWay(ctx: ApiContext, conversationId: string, multitask: "interrupt" | "rollback", principal: Principal): Promise<void> {
  const { store } = ctx.options;
  const conversation = await visibleConversation(ctx, conversationId, principal);
  const waiting = ((await store.runsOf([conversation.id])).get(conversation.id) ?? []).filter(
    (r) => r.status === "queued" && r.queueReason === "BEHIND_ACTIVE_RUN",
  );
  for (const run of waiting.reverse()) {
    await cancelActiveRun(ctx, { runId: run.id }, principal).catch((error: unknown) => {
      if (!(error instanceof RunNotActiveError)) throw error; // promoted and ended meanwhile
    });
  }
  const active = await store.activeRun(conversation.id);
  if (!active) return;
  const cancelled = await cancelActiveRun(ctx, { runId: active.id }, principal).catch((error: unknown) => {
    if (error instanceof RunNotActiveError) return null; // it ended meanwhile
    throw error;
  });
  if (multitask === "rollback" && cancelled?.status === "cancelled") {
    // A cancel sent to another instance is recorded at once; that instance may still be stopping the graph.
    await waitUntilStopped(ctx, cancelled.id);
    await store.rollBackThread(conversation.id, cancelled.startCheckpointId);
  }
}

/**
 * Waits until the cancelled run no longer executes: at once for one of this
 * instance (its cancel waited for it); one of another instance gets the time
 * that instance needs to see the cancel and stop the graph (its next event, or
 * a heartbeat), watched through its log ending.
 */
async function waitUntilStopped(ctx: ApiContext, runId: string): Promise<void> {
  const here = ctx.execution.finished(runId);
  if (here) return void (await here);
  const log = await ctx.options.bus.subscribeRun(runId, Number.MAX_SAFE_INTEGER - 1).catch(() => null);
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

/** Records the run (and a new conversation, without one) and hands it to the execution side. */
async function recordStart(
  ctx: ApiContext,
  input: { conversationId?: string | null; agent?: string | null; webhook: WebhookTarget | null; firing?: StartRunRequest["firing"] },
  message: string,
  principal: Principal,
  key: NewIdempotencyKey | null,
  behind = false,
): Promise<{ run: RunRecord; conversation: ConversationRecord }> {
  const { store } = ctx.options;
  const idempotency = key ?? undefined;
  if (input.conversationId == null) {
    const agent = requireAgent(ctx, input.agent ?? DEFAULT_AGENT);
    const conversationId = randomUUID();
    const result = await store.startRun(
      { ...newRun(ctx, conversationId, "start", message, mintMark(), null, principal, agent, input.webhook), idempotency, firing: input.firing ?? undefined },
      {
        title: titleFromMessage(message),
        agent,
        owner: principal.id,
      },
    );
    return { ...result, run: await handOver(ctx, result.run, agent, { kind: "message", text: message }, "created", principal) };
  }
  const conversation = await visibleConversation(ctx, input.conversationId, principal);
  const agent = requireAgent(ctx, input.agent ?? conversation.agent, conversation);
  const [startMark, head] = await startPoint(ctx.options, conversation.id);
  const result = await store.startRun({
    ...newRun(ctx, conversation.id, "start", message, startMark, head, principal, agent, input.webhook),
    idempotency,
    firing: input.firing ?? undefined,
    behind: behind && ctx.options.admission !== undefined,
  });
  return { ...result, run: await handOver(ctx, result.run, agent, { kind: "message", text: message }, "updated", principal) };
}
