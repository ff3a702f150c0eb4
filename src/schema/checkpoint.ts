// Checkpoint: LangGraph's snapshot after a super-step, its writes, and the run
// the timestamp correlation gives it; TaskError: a failed task. Everything is
// read through the execution's read scope (src/read/scope.ts).
import { GraphQLError } from "graphql";
import type { CheckpointWriteRecord } from "../domain/records.ts";
import { toApiMessage } from "../read/messages.ts";
import { stateJson } from "../read/state-json.ts";
import { builder } from "./builder.ts";
import { CheckpointSource } from "./enums.ts";
import { Checkpoint, Conversation, Message, Node, Run, TaskError } from "./refs.ts";

export const CheckpointWrite = builder.objectRef<CheckpointWriteRecord>("CheckpointWrite").implement({
  description: "A task's output recorded against the checkpoint it ran from (LangGraph's writes table).",
  fields: (t) => ({
    taskId: t.exposeString("taskId"),
    channel: t.exposeString("channel", { description: "The state channel written; __error__ records a failed task." }),
    idx: t.exposeInt("idx"),
    value: t.field({ type: "JSON", nullable: true, description: "The stored value (LangChain objects in their serialized form).", resolve: (w) => w.value }),
  }),
});

Checkpoint.implement({
  description: "LangGraph's snapshot of a conversation's thread after a super-step.",
  interfaces: [Node],
  fields: (t) => ({
    id: t.exposeID("id", { description: "The LangGraph checkpoint_id (a time-ordered UUID v6)." }),
    conversation: t.field({
      type: Conversation,
      resolve: async (c, _a, ctx, info) => {
        const conversation = await ctx.reads(info.rootValue).conversation(c.threadId);
        if (!conversation) throw new GraphQLError(`Conversation ${JSON.stringify(c.threadId)} no longer exists`, { extensions: { code: "NOT_FOUND" } });
        return conversation;
      },
    }),
    step: t.exposeInt("step", { description: "LangGraph's step number; it continues across runs of one thread." }),
    source: t.field({ type: CheckpointSource, resolve: (c) => c.source }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "The checkpoint's ts." }),
    next: t.stringList({
      description: "The nodes still to run from this checkpoint.",
      resolve: async (c, _a, ctx, info) => (await ctx.reads(info.rootValue).state(c))?.next ?? [],
    }),
    messageCount: t.int({
      description: "Messages in the thread at this checkpoint.",
      resolve: async (c, _a, ctx, info) => (await ctx.reads(info.rootValue).contents(c))?.messageCount ?? 0,
    }),
    lastMessage: t.field({
      type: Message,
      nullable: true,
      resolve: async (c, _a, ctx, info) => {
        const contents = await ctx.reads(info.rootValue).contents(c);
        return contents?.lastMessage ? toApiMessage(contents.lastMessage, contents.messageCount - 1) : null;
      },
    }),
    parent: t.field({ type: Checkpoint, nullable: true, resolve: (c, _a, ctx, info) => ctx.reads(info.rootValue).parent(c) }),
    run: t.field({
      type: Run,
      nullable: true,
      description: "The run whose window [startedAt, finishedAt or now] holds this checkpoint (timestamp correlation); null outside every run.",
      resolve: (c, _a, ctx, info) => ctx.reads(info.rootValue).runOf(c),
    }),
    writes: t.field({ type: [CheckpointWrite], resolve: (c, _a, ctx, info) => ctx.reads(info.rootValue).writes(c) }),
    state: t.field({
      type: "JSON",
      description:
        "The thread's state at this checkpoint: every channel's value by name, messages as the Message type gives them ({id role content toolCalls toolCallId name}).",
      resolve: async (c, _a, ctx, info) => stateJson((await ctx.reads(info.rootValue).state(c))?.values ?? {}),
    }),
    metadata: t.field({
      type: "JSON",
      description: "LangGraph's checkpoint metadata: source, step, parents (and what a graph adds).",
      resolve: async (c, _a, ctx, info) => stateJson((await ctx.reads(info.rootValue).state(c))?.metadata ?? {}),
    }),
  }),
});

TaskError.implement({
  description: "A task that failed: LangGraph's __error__ write, attributed to the run that was working on it.",
  fields: (t) => ({
    taskId: t.exposeString("taskId"),
    node: t.string({
      nullable: true,
      description: "The graph node the task ran.",
      resolve: (f, _a, ctx, info) => ctx.reads(info.rootValue).taskNode(f.checkpoint, f.taskId),
    }),
    message: t.exposeString("message"),
    checkpoint: t.field({ type: Checkpoint, description: "The checkpoint the task ran from.", resolve: (f) => f.checkpoint }),
  }),
});
