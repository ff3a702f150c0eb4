// Resuming a conversation: a new run over the thread's pending step, or with
// answers to the interrupts it waits on. A resume is a new run, never a second
// life of an old one.
import type { PendingInterrupt } from "../agent/runtime.ts";
import { approvalAnswerProblem, isToolApprovalRequest } from "../agent/chat-graph.ts";
import { inDoubtAnswerProblem, isToolInDoubtRequest } from "../agent/tool-journal.ts";
import type { NewIdempotencyKey, NewRun, RunRecord, WebhookTarget } from "../domain/records.ts";
import { InterruptMismatchError, NothingToResumeError, NotFoundError, RunInProgressError, ValidationError, requireUuid } from "../domain/errors.ts";
import type { Principal } from "../domain/principal.ts";
import { IdempotencyKeyTakenError } from "../storage/run-store/types.ts";
import type { WebhookInput } from "../webhooks/url-guard.ts";
import { checkWebhook, handOver, newRun, requireAccepting, requireAgent, visibleConversation, type ApiContext } from "./api-context.ts";
import { callKey, replay } from "./idempotent-replay.ts";
import { startPoint } from "./start-point.ts";

/** An answer to one pending interrupt, as resumeRun receives it. */
export interface InterruptResponse {
  interruptId: string;
  value: unknown;
}

/**
 * Continues the thread: its pending step (after a failure, cancel or
 * interruption), or, with `responses`, the interrupts it waits on. A thread
 * that waits for answers must get one for each pending interrupt and none
 * other (InterruptMismatchError); answers to tool approvals are checked
 * against what each asks (ValidationError).
 */
export async function resumeRun(
  ctx: ApiContext,
  input: { conversationId: string; responses?: InterruptResponse[] | null; idempotencyKey?: string | null; webhook?: WebhookInput | null },
  principal: Principal,
): Promise<RunRecord> {
  requireUuid(input.conversationId, "conversationId");
  const webhook = checkWebhook(ctx, input.webhook);
  const key = callKey(
    ctx,
    input.idempotencyKey,
    "resumeRun",
    { conversationId: input.conversationId, responses: input.responses ?? [], ...(webhook ? { webhook } : {}) },
    principal,
  );
  const missing = () => new NotFoundError("Conversation", input.conversationId);
  if (key) {
    const replayed = await replay(ctx, key, principal, missing);
    if (replayed) return replayed.run!;
  }
  requireAccepting(ctx);
  try {
    return await recordResume(ctx, { ...input, webhook }, principal, key);
  } catch (error) {
    if (!(error instanceof IdempotencyKeyTakenError) || !key) throw error;
    const replayed = await replay(ctx, key, principal, missing);
    if (!replayed) throw error;
    return replayed.run!;
  }
}

async function recordResume(
  ctx: ApiContext,
  input: { conversationId: string; responses?: InterruptResponse[] | null; webhook: WebhookTarget | null },
  principal: Principal,
  key: NewIdempotencyKey | null,
): Promise<RunRecord> {
  const { store, agent: runtime } = ctx.options;
  const conversation = await visibleConversation(ctx, input.conversationId, principal);
  const agent = requireAgent(ctx, conversation.agent, conversation);
  const active = await store.activeRun(conversation.id);
  if (active) throw new RunInProgressError(conversation.id, active.id);
  const thread = await runtime.readThread(conversation.id, agent);
  const responses = input.responses ?? [];
  const answers = checkResponses(conversation.id, thread.interrupts, responses);
  if (!answers && thread.next.length === 0 && thread.interrupts.length === 0) throw new NothingToResumeError(conversation.id);
  const [startMark] = await startPoint(ctx.options, conversation.id);
  const run: NewRun = {
    ...newRun(ctx, conversation.id, "resume", null, startMark, thread.checkpointId, principal, agent, input.webhook),
    answers: responses.length ? responses : undefined,
    idempotency: key ?? undefined,
  };
  const { run: started } = await store.startRun(run);
  return handOver(ctx, started, agent, answers ? { kind: "answers", answers } : { kind: "continue" }, "updated", principal);
}

/** The answers by interrupt id, or null for a plain resume; refuses what LangGraph could not use. */
function checkResponses(conversationId: string, pending: PendingInterrupt[], responses: InterruptResponse[]): Record<string, unknown> | null {
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
