// Editing a thread's state: the editState mutation (LangGraph's updateState,
// recorded as a run of kind EDIT) and what an edit run wrote (Run.edit).
import type { ConversationRecord, RunRecord, StateEdit } from "../domain/records.ts";
import { IdempotencyKeyReusedError, NotFoundError, QuotaExceededError, RunInProgressError, ValidationError } from "../domain/errors.ts";
import { builder } from "./builder.ts";
import { Checkpoint, Conversation, Run } from "./refs.ts";

const StateEditRef = builder.objectRef<StateEdit & { checkpointId: string | null }>("StateEdit").implement({
  description: "What an EDIT run wrote into its thread.",
  fields: (t) => ({
    values: t.field({ type: "JSON", description: "The channel values as given to editState.", resolve: (e) => e.values }),
    asNode: t.exposeString("asNode", { nullable: true, description: "The node the values were written as; null when LangGraph chose." }),
    checkpoint: t.field({
      type: Checkpoint,
      nullable: true,
      description: "The checkpoint that was edited (the new checkpoint's parent).",
      resolve: (e, _a, ctx, info) => (e.checkpointId ? ctx.reads(info.rootValue).checkpoint(e.checkpointId) : null),
    }),
  }),
});

builder.objectField(Run, "edit", (t) =>
  t.field({
    type: StateEditRef,
    nullable: true,
    description: "For an EDIT run, what it wrote; null for other kinds.",
    resolve: (run) => (run.edit ? { ...run.edit, checkpointId: run.startCheckpointId } : null),
  }),
);

builder.objectField(Run, "startedBy", (t) =>
  t.exposeString("startedBy", { nullable: true, description: "The principal that asked for the run (a user's id); null for runs from before principals." }),
);

const EditStateInput = builder.inputType("EditStateInput", {
  fields: (t) => ({
    checkpointId: t.id({ required: true, description: "The checkpoint to edit: the new checkpoint's parent (a past one branches the thread from there)." }),
    values: t.field({
      type: "JSON",
      required: true,
      description:
        "Channel values by name, applied through each channel's reducer. Messages as Message reads ({id, role, content, toolCalls, toolCallId}); a message with an existing id replaces that message.",
    }),
    asNode: t.string({
      description: "Write the values as this node did (its edges decide `next`); __start__ makes them the input. Default: LangGraph's choice.",
    }),
    idempotencyKey: t.string({
      description:
        "A key the client chooses (at most 255 characters): a retry with the same key and input within 24 hours answers the first call's result and does nothing again.",
    }),
  }),
});

const EditStateSuccess = builder.objectRef<{ conversation: ConversationRecord; run: RunRecord }>("EditStateSuccess").implement({
  fields: (t) => ({
    run: t.field({ type: Run, description: "The EDIT run that recorded the change: COMPLETED, or FAILED with LangGraph's reason.", resolve: (r) => r.run }),
    conversation: t.field({ type: Conversation, resolve: (r) => r.conversation }),
    checkpoint: t.field({
      type: Checkpoint,
      nullable: true,
      description: "The checkpoint the edit wrote (the thread's head now); null when it failed.",
      resolve: async (r, _a, ctx, info) => (await ctx.reads(info.rootValue).checkpointsOf(r.run)).at(-1) ?? null,
    }),
  }),
});

builder.mutationField("editState", (t) =>
  t.field({
    type: EditStateSuccess,
    description:
      "Writes a new checkpoint into a conversation's thread through LangGraph's updateState, recorded as a run of kind EDIT. Resume the conversation to run on from it.",
    args: { input: t.arg({ type: EditStateInput, required: true }) },
    errors: {
      types: [ValidationError, NotFoundError, RunInProgressError, QuotaExceededError, IdempotencyKeyReusedError],
      directResult: true,
      union: { name: "EditStateResult" },
    },
    resolve: (_root, { input }, ctx) =>
      ctx.runs.editState(
        { checkpointId: String(input.checkpointId), values: input.values, asNode: input.asNode, idempotencyKey: input.idempotencyKey },
        ctx.principal,
      ),
  }),
);
