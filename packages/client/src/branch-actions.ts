// A conversation store's branching actions: fork the thread at a checkpoint,
// edit it there. Rarer than sending and answering, so conversation-api.ts
// loads this module when one is first asked for: a page that never forks or
// edits never downloads it (an app's bundler splits it off).
import { newKey, type ActionHost, type EditInput, type ForkOptions } from "./conversation-actions.js";
import type { ClientCore, Result } from "./core.js";
import { CHECKPOINT_MESSAGE, EDIT_STATE, FORK_CONVERSATION } from "./extra-documents.js";
import type { JsonValue } from "./generated.js";
import { emptyRun, withRecord, type RunState } from "./run-log.js";

/** fork()'s arguments in either form (the deprecated one names the message second) as its options. */
export function forkOptions(second: ForkOptions | string | undefined, third: Omit<ForkOptions, "message">): ForkOptions {
  return typeof second === "object" && second !== null ? second : { ...third, message: second };
}

/** edit()'s arguments in either form (the deprecated one: checkpointId, values, asNode, options) as its input. */
export function editInput(
  first: EditInput | string,
  values: { [channel: string]: JsonValue } | undefined,
  asNode: string | undefined,
  options: { idempotencyKey?: string },
): EditInput {
  return typeof first === "string" ? { checkpointId: first, values, asNode, idempotencyKey: options.idempotencyKey } : first;
}

/** Forks the thread at a checkpoint; the store shows the fork unless `open: false`. */
export async function forkThread(
  host: ActionHost,
  checkpointId: string,
  options: ForkOptions,
): Promise<Result<{ conversationId: string; runId: string | null }>> {
  const message = options.message;
  const input = { checkpointId, idempotencyKey: options.idempotencyKey ?? newKey(), ...(message !== undefined ? { message } : {}) };
  const outcome = await host.core.mutate(FORK_CONVERSATION, { input }, "forkConversation");
  if (!outcome.ok) return outcome;
  const { conversation, run } = outcome.value;
  if (options.open ?? true) {
    host.open(conversation.id);
    if (run) host.follow(run);
    host.publish();
  }
  return { ok: true, value: { conversationId: conversation.id, runId: run?.id ?? null } };
}

/** editState at a checkpoint: an EDIT run, followed unless the store moved on since `gen` (when edit() was called). */
export async function editThread(host: ActionHost, edit: EditInput, gen = host.generation()): Promise<Result<{ run: RunState; checkpointId: string | null }>> {
  const written = await editValues(host.core, edit);
  if (!written.ok) return written;
  const input = {
    checkpointId: edit.checkpointId,
    values: written.value.values,
    idempotencyKey: edit.idempotencyKey ?? newKey(),
    ...(written.value.asNode !== undefined ? { asNode: written.value.asNode } : {}),
  };
  const outcome = await host.core.mutate(EDIT_STATE, { input }, "editState");
  if (!outcome.ok) return outcome;
  const { run, checkpoint } = outcome.value;
  if (gen !== host.generation()) return { ok: true, value: { run: withRecord(emptyRun(run.id), run), checkpointId: checkpoint?.id ?? null } };
  return { ok: true, value: { run: host.record(run, true), checkpointId: checkpoint?.id ?? null } };
}

/** What edit() writes: its values, or for `message` the checkpoint's user message replaced (read to learn its id). */
async function editValues(core: ClientCore, edit: EditInput): Promise<Result<{ values: { [channel: string]: JsonValue }; asNode: string | undefined }>> {
  if ((edit.values === undefined) === (edit.message === undefined)) {
    return { ok: false, error: { code: "VALIDATION", message: "edit: give either `values` or `message`" } };
  }
  if (edit.values !== undefined) return { ok: true, value: { values: edit.values, asNode: edit.asNode } };
  let data;
  try {
    data = await core.query(CHECKPOINT_MESSAGE, { id: edit.checkpointId });
  } catch (error) {
    return { ok: false, error: { code: "NETWORK", message: `could not read the checkpoint: ${(error as Error).message}` } };
  }
  const node = data.node && "lastMessage" in data.node ? data.node : null;
  if (!node) return { ok: false, error: { code: "NOT_FOUND", message: `no checkpoint ${edit.checkpointId}` } };
  const last = node.lastMessage;
  if (!last || last.role !== "USER") {
    return {
      ok: false,
      error: { code: "VALIDATION", message: "edit({message}): the checkpoint's last message is not a user message (edit at the checkpoint that added it)" },
    };
  }
  return { ok: true, value: { values: { messages: [{ id: last.id, role: "USER", content: edit.message! }] }, asNode: edit.asNode ?? "__start__" } };
}
