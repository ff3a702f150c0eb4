// Editing a conversation's state: a new checkpoint written through LangGraph's
// updateState, recorded as a run of kind `edit`. An edit calls no model, so it
// is written here, in the request, and never goes to the execution side; it
// keeps the ledger's order all the same: the row first, the outcome committed
// before its terminal event.
import { messageFromJson } from "../agent/message-json.ts";
import type { ConversationRecord, NewIdempotencyKey, RunRecord, StateEdit } from "../domain/records.ts";
import { NotFoundError, RunInProgressError, ValidationError, requireUuid } from "../domain/errors.ts";
import { canSee, type Principal } from "../domain/principal.ts";
import { mintMark } from "../correlation/index.ts";
import { IdempotencyKeyTakenError } from "../storage/run-store/types.ts";
import { announce, newRun, quotaOf, requireAccepting, requireAgent, type ApiContext } from "./api-context.ts";
import { callKey, replay } from "./idempotent-replay.ts";
import { startPoint } from "./start-point.ts";

/**
 * Writes `values` into a conversation's thread as a new checkpoint whose
 * parent is `checkpointId` (LangGraph's updateState, as if node `asNode` had
 * written them), recorded as a run of kind `edit`: who, when, what it wrote.
 * The run's window holds the checkpoint it writes, so the correlation gives
 * it to the edit. Bad input is refused before anything is written.
 */
export async function editState(
  ctx: ApiContext,
  input: { checkpointId: string; values: unknown; asNode?: string | null; idempotencyKey?: string | null },
  principal: Principal,
): Promise<{ conversation: ConversationRecord; run: RunRecord }> {
  requireUuid(input.checkpointId, "checkpointId");
  const values = input.values;
  if (values === null || typeof values !== "object" || Array.isArray(values)) throw new ValidationError("values must be an object of channel values", "values");
  if (Object.keys(values).length === 0) throw new ValidationError("values must name at least one channel", "values");
  const asNode = input.asNode ?? null;
  if (asNode !== null && asNode.trim().length === 0) throw new ValidationError("asNode must not be blank", "asNode");
  const edit = { values: values as Record<string, unknown>, asNode };
  const key = callKey(ctx, input.idempotencyKey, "editState", { checkpointId: input.checkpointId.toLowerCase(), ...edit }, principal);
  const missing = () => new NotFoundError("Checkpoint", input.checkpointId);
  if (key) {
    const replayed = await replay(ctx, key, principal, missing);
    if (replayed?.run) return { conversation: replayed.conversation, run: replayed.run };
  }
  requireAccepting(ctx);
  const editing = writeEdit(ctx, input.checkpointId.toLowerCase(), edit, principal, key);
  ctx.editing.add(editing);
  void editing.catch(() => {}).finally(() => ctx.editing.delete(editing));
  try {
    return await editing;
  } catch (error) {
    // A retry racing the first call (on any instance) finds its key taken, or its run already active: answer what the first one did.
    if (!(error instanceof IdempotencyKeyTakenError || error instanceof RunInProgressError) || !key) throw error;
    const replayed = await replay(ctx, key, principal, missing);
    if (!replayed?.run) throw error;
    return { conversation: replayed.conversation, run: replayed.run };
  }
}

async function writeEdit(
  ctx: ApiContext,
  checkpointId: string,
  edit: StateEdit,
  principal: Principal,
  key: NewIdempotencyKey | null,
): Promise<{ conversation: ConversationRecord; run: RunRecord }> {
  const { agent, store, bus, logger } = ctx.options;
  const [checkpoint] = await ctx.options.checkpointReads.checkpointsByIds([checkpointId]);
  if (!checkpoint) throw new NotFoundError("Checkpoint", checkpointId);
  const conversation = await store.getConversation(checkpoint.threadId);
  // Another user's checkpoint is one that does not exist.
  if (!conversation || !canSee(principal, conversation)) throw new NotFoundError("Checkpoint", checkpointId);
  const agentName = requireAgent(ctx, conversation.agent, conversation);
  const values = editValues(ctx, agentName, edit);
  if (edit.asNode !== null && !agent.updateNodes(agentName).includes(edit.asNode)) {
    throw new ValidationError(
      `asNode ${JSON.stringify(edit.asNode)} is not a node of agent ${JSON.stringify(agentName)} (nodes: ${agent.updateNodes(agentName).join(", ")})`,
      "asNode",
    );
  }
  const active = await store.activeRun(conversation.id);
  if (active) throw new RunInProgressError(conversation.id, active.id);
  const [startMark] = await startPoint(ctx.options, conversation.id);
  // An edit calls no model: it is never queued and not held to QUOTA_ACTIVE_RUNS, but it writes a
  // checkpoint, so it counts toward QUOTA_RUNS_PER_MINUTE. The database still allows one active run.
  const quota = quotaOf(ctx, principal);
  const { run } = await store.startRun({
    ...newRun(ctx, conversation.id, "edit", null, startMark, checkpoint.id, principal, agentName),
    endpoint: null,
    quota: quota && { activeRuns: 0, runsPerMinute: quota.runsPerMinute },
    edit,
    idempotency: key ?? undefined,
  });
  // Counted and traced like any run (kind "edit"), so metrics see every attempt the ledger records.
  const watch = ctx.telemetry.start({ id: run.id, conversationId: conversation.id, kind: "edit", agent: agentName, queuedAt: null }, ctx.telemetry.origin());
  const events = bus.openRun(run.id, conversation.id);
  let lastSeq = events.publish({ type: "status", status: "running", errorCode: null, errorMessage: null }).seq;
  announce(ctx, { conversationId: conversation.id, kind: "updated", at: ctx.now() });
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
    finishedAt: ctx.now(),
    endMark,
    lastEventSeq: lastSeq + 1,
    messageCount,
    usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0, timeToFirstTokenMs: null, modelDurationMs: 0 },
    interrupts: [],
  });
  const final = recorded ?? (await store.getRun(run.id)) ?? run;
  watch.end({ status: final.status, errorCode: final.errorCode });
  events.publish({ type: "status", status: final.status, errorCode: final.errorCode, errorMessage: final.errorMessage });
  announce(ctx, { conversationId: conversation.id, kind: "updated", at: ctx.now() });
  await events.flushed().catch((error: unknown) => logger.warn("run events not delivered", { runId: run.id, error }));
  return { conversation: (await store.getConversation(conversation.id)) ?? conversation, run: final };
}

/** The edit's values as the graph's channels take them: known channels only; messages as the API types them, or as LangChain reads them. */
function editValues(ctx: ApiContext, agentName: string, edit: StateEdit): Record<string, unknown> {
  const channels = ctx.options.agent.stateChannels(agentName);
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
