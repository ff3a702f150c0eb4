// Checkpoints as API types, and the edges the timestamp correlation draws:
// Conversation.checkpoints, Run.checkpoints/messages/failedTasks, Checkpoint.run,
// CheckpointEvent.checkpoint. Everything is read through the context's
// per-execution checkpoint scope (src/read), which batches and caches.
import { GraphQLError, type GraphQLResolveInfo } from "graphql";
import type { Context } from "../context.ts";
import type { CheckpointRecord, CheckpointWriteRecord } from "../read/checkpoints.ts";
import type { CheckpointReadScope, FailedTask } from "../read/checkpoints-scope.ts";
import { toApiMessage, toApiMessages } from "../read/messages.ts";
import { ValidationError } from "../runs/errors.ts";
import { builder } from "./builder.ts";
import { NodeInterface } from "./node.ts";
import { Message } from "./message.ts";
import { Conversation } from "./conversation.ts";
import { Run } from "./run.ts";
import "./events.ts";
import type { ObjectRef } from "@pothos/core";
import type { RunEvent } from "../events/types.ts";

type BuilderTypes = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;
/** CheckpointEvent is declared with the other run events (events.ts); its checkpoint field is added here, by type name. */
const CheckpointEvent = "CheckpointEvent" as unknown as ObjectRef<BuilderTypes, Extract<RunEvent, { type: "checkpoint" }>>;

/** The loaders of this execution: the operation, or the one subscription event being resolved. */
function reads(ctx: Context, info: GraphQLResolveInfo): CheckpointReadScope {
  return ctx.checkpoints(info.rootValue);
}

export const CheckpointSource = builder.enumType("CheckpointSource", {
  description: "What wrote the checkpoint (LangGraph's metadata.source).",
  values: {
    INPUT: { value: "input", description: "New input arrived (a user message)." },
    LOOP: { value: "loop", description: "A super-step of the graph finished." },
    UPDATE: { value: "update", description: "A state update from outside the graph's own run." },
    FORK: { value: "fork", description: "A copy of another checkpoint." },
  } as const,
});

export const CheckpointWrite = builder.objectRef<CheckpointWriteRecord>("CheckpointWrite").implement({
  description: "A task's output recorded against the checkpoint it ran from (LangGraph's writes table).",
  fields: (t) => ({
    taskId: t.exposeString("taskId"),
    channel: t.exposeString("channel", { description: "The state channel written; __error__ records a failed task." }),
    idx: t.exposeInt("idx"),
    value: t.field({ type: "JSON", nullable: true, description: "The stored value (LangChain objects in their serialized form).", resolve: (w) => w.value }),
  }),
});

export const Checkpoint = builder.objectRef<CheckpointRecord>("Checkpoint");

Checkpoint.implement({
  description: "LangGraph's snapshot of a conversation's thread after a super-step.",
  interfaces: [NodeInterface],
  fields: (t) => ({
    id: t.exposeID("id", { description: "The LangGraph checkpoint_id (a time-ordered UUID v6)." }),
    conversation: t.field({
      type: Conversation,
      resolve: async (c, _a, ctx) => {
        const conversation = await ctx.prisma.conversation.findUnique({ where: { id: c.threadId } });
        if (!conversation) throw new GraphQLError(`Conversation ${JSON.stringify(c.threadId)} no longer exists`, { extensions: { code: "NOT_FOUND" } });
        return conversation;
      },
    }),
    step: t.exposeInt("step", { description: "LangGraph's step number; it continues across runs of one thread." }),
    source: t.field({ type: CheckpointSource, resolve: (c) => c.source }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "The checkpoint's ts." }),
    next: t.stringList({
      description: "The nodes still to run from this checkpoint.",
      resolve: async (c, _a, ctx, info) => (await reads(ctx, info).state(c))?.next ?? [],
    }),
    messageCount: t.int({
      description: "Messages in the thread at this checkpoint.",
      resolve: async (c, _a, ctx, info) => (await reads(ctx, info).contents(c))?.messageCount ?? 0,
    }),
    lastMessage: t.field({
      type: Message,
      nullable: true,
      resolve: async (c, _a, ctx, info) => {
        const contents = await reads(ctx, info).contents(c);
        return contents?.lastMessage ? toApiMessage(contents.lastMessage, contents.messageCount - 1) : null;
      },
    }),
    parent: t.field({ type: Checkpoint, nullable: true, resolve: (c, _a, ctx, info) => reads(ctx, info).parent(c) }),
    run: t.field({
      type: Run,
      nullable: true,
      description: "The run whose window [startedAt, finishedAt or now] holds this checkpoint (timestamp correlation); null outside every run.",
      resolve: (c, _a, ctx, info) => reads(ctx, info).runOf(c),
    }),
    writes: t.field({ type: [CheckpointWrite], resolve: (c, _a, ctx, info) => reads(ctx, info).writes(c) }),
  }),
});

export const TaskError = builder.objectRef<FailedTask>("TaskError").implement({
  description: "A task that failed: LangGraph's __error__ write, attributed to the run that was working on it.",
  fields: (t) => ({
    taskId: t.exposeString("taskId"),
    node: t.string({
      nullable: true,
      description: "The graph node the task ran.",
      resolve: (f, _a, ctx, info) => reads(ctx, info).taskNode(f.checkpoint, f.taskId),
    }),
    message: t.exposeString("message"),
    checkpoint: t.field({ type: Checkpoint, description: "The checkpoint the task ran from.", resolve: (f) => f.checkpoint }),
  }),
});

builder.prismaObjectField("Conversation", "checkpoints", (t) =>
  t.connection(
    {
      type: Checkpoint,
      description: "The thread's checkpoints, oldest first. Cursors are checkpoint ids, so they stay valid as checkpoints arrive. At most 100 per page.",
      resolve: async (conversation, args, ctx, info) => {
        let page;
        try {
          page = await reads(ctx, info).page(conversation.id, args);
        } catch (error) {
          if (error instanceof ValidationError) throw new GraphQLError(error.message, { extensions: { code: "VALIDATION", field: error.field } });
          throw error;
        }
        return {
          edges: page.nodes.map((node) => ({ cursor: node.id, node })),
          pageInfo: {
            hasNextPage: page.hasNextPage,
            hasPreviousPage: page.hasPreviousPage,
            startCursor: page.nodes[0]?.id ?? null,
            endCursor: page.nodes.at(-1)?.id ?? null,
          },
        };
      },
    },
    { name: "CheckpointConnection" },
    { name: "CheckpointEdge" },
  ),
);

builder.prismaObjectFields("Run", (t) => ({
  checkpoints: t.field({
    type: [Checkpoint],
    description: "The checkpoints inside the run's window, oldest first (timestamp correlation).",
    resolve: (run, _a, ctx, info) => reads(ctx, info).checkpointsOf(run),
  }),
  messages: t.field({
    type: [Message],
    description: "Messages first seen in this run's checkpoints: the user message of a start, the model's and tools' replies.",
    resolve: async (run, _a, ctx, info) => toApiMessages(await reads(ctx, info).messagesOf(run)),
  }),
  failedTasks: t.field({
    type: [TaskError],
    description: "Tasks that failed while this run worked on them (__error__ writes).",
    resolve: (run, _a, ctx, info) => reads(ctx, info).failedTasksOf(run),
  }),
}));

builder.objectField(CheckpointEvent, "checkpoint", (t) =>
  t.field({
    type: Checkpoint,
    description: "The checkpoint just saved.",
    resolve: async (event, _a, ctx, info) => {
      const checkpoint = await reads(ctx, info).checkpoint(event.checkpointId);
      if (!checkpoint) throw new GraphQLError(`Checkpoint ${event.checkpointId} no longer exists`, { extensions: { code: "NOT_FOUND" } });
      return checkpoint;
    },
  }),
);
