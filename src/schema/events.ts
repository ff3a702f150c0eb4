// Subscriptions: what a run and a conversation tell their observers, live.
import {
  defaultFieldResolver,
  GraphQLBoolean,
  GraphQLError,
  GraphQLFloat,
  GraphQLInt,
  isListType,
  isNonNullType,
  isObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
} from "graphql";
import type { RunEvent } from "../events/types.ts";
import { builder } from "./builder.ts";
import type { Context } from "../context.ts";
import { RunErrorCode, RunStatus } from "./run.ts";
import { Conversation } from "./conversation.ts";
import { requireUuid, ValidationError } from "../runs/errors.ts";
import { SubscriberOverflowError } from "../events/subscriber.ts";
import { followRun, mapStream } from "../events/streams.ts";
import type { ConversationChange, ConversationSnapshot } from "../events/types.ts";

type Of<T extends RunEvent["type"]> = Extract<RunEvent, { type: T }>;

export const RunEventInterface = builder.interfaceRef<RunEvent>("RunEvent").implement({
  description: "One event of a run. seq counts from 1 within the run; after the terminal RunStatusEvent the subscription completes.",
  resolveType: (e) =>
    ({
      status: "RunStatusEvent",
      token: "TokenEvent",
      toolCall: "ToolCallEvent",
      toolResult: "ToolResultEvent",
      checkpoint: "CheckpointEvent",
      replayGap: "ReplayGapEvent",
    })[e.type],
  fields: (t) => ({
    seq: t.exposeInt("seq"),
    runId: t.exposeID("runId"),
    at: t.expose("at", { type: "DateTime" }),
  }),
});

builder.objectRef<Of<"status">>("RunStatusEvent").implement({
  description: "The run's status: RUNNING first, a terminal status last (published after the outcome is committed).",
  interfaces: [RunEventInterface],
  fields: (t) => ({
    status: t.field({ type: RunStatus, resolve: (e) => e.status }),
    errorCode: t.field({ type: RunErrorCode, nullable: true, resolve: (e) => e.errorCode as "AGENT_FAILURE" | null }),
    errorMessage: t.exposeString("errorMessage", { nullable: true }),
  }),
});

builder.objectRef<Of<"token">>("TokenEvent").implement({
  description: "A piece of model output as it streams.",
  interfaces: [RunEventInterface],
  fields: (t) => ({
    text: t.exposeString("text"),
    messageId: t.exposeString("messageId", { nullable: true, description: "The id of the assistant message the token belongs to." }),
    node: t.exposeString("node", { description: "The graph node that produced it (agent)." }),
  }),
});

builder.objectRef<Of<"toolCall">>("ToolCallEvent").implement({
  interfaces: [RunEventInterface],
  fields: (t) => ({
    toolCallId: t.exposeString("toolCallId"),
    name: t.exposeString("name"),
    args: t.field({ type: "JSON", resolve: (e) => e.args }),
  }),
});

builder.objectRef<Of<"toolResult">>("ToolResultEvent").implement({
  interfaces: [RunEventInterface],
  fields: (t) => ({
    toolCallId: t.exposeString("toolCallId"),
    name: t.exposeString("name"),
    content: t.exposeString("content"),
    isError: t.exposeBoolean("isError"),
  }),
});

builder.objectRef<Of<"checkpoint">>("CheckpointEvent").implement({
  description: "LangGraph saved a checkpoint of the run's thread.",
  interfaces: [RunEventInterface],
  fields: (t) => ({
    checkpointId: t.exposeID("checkpointId"),
  }),
});

builder.objectRef<Of<"replayGap">>("ReplayGapEvent").implement({
  description: "Events fromSeq..toSeq were no longer retained; the rest follows.",
  interfaces: [RunEventInterface],
  fields: (t) => ({ fromSeq: t.exposeInt("fromSeq"), toSeq: t.exposeInt("toSeq") }),
});

/** Stands in for the event a stream could not deliver: resolve turns it into the subscription's last, failed result. */
class CutOff {
  constructor(readonly error: GraphQLError) {}
}

/**
 * A subscriber that fell too far behind ends with one result carrying a
 * SUBSCRIBER_TOO_SLOW error, then completes: the same on WebSocket and SSE.
 */
function cutOffWhenTooSlow(error: unknown): CutOff | undefined {
  if (!(error instanceof SubscriberOverflowError)) return undefined;
  return new CutOff(new GraphQLError(error.message, { extensions: { code: error.code } }));
}

function deliver<T>(item: T | CutOff): T {
  if (item instanceof CutOff) throw item.error;
  return item;
}

/** Passes each event through, after dropping the reads the previous event cached in the subscription's context. */
function freshFor(ctx: Context) {
  return <T>(event: T): T => {
    ctx.forgetReads();
    return event;
  };
}

/** How often a subscription to a run this process does not execute asks the database whether it has ended. */
const STORED_RUN_POLL_MS = 500;

builder.subscriptionType({});

builder.subscriptionField("runEvents", (t) =>
  t.field({
    type: RunEventInterface,
    description: "Every event of one run: the retained events with seq > after, then live, with no gap and no duplicate. Completes after the terminal RunStatusEvent.",
    args: {
      runId: t.arg.id({ required: true }),
      after: t.arg.int({ description: "The last seq already received; 0 or omitted replays from the start." }),
    },
    subscribe: async (_root, args, ctx) => {
      const runId = String(args.runId);
      const after = args.after ?? 0;
      try {
        requireUuid(runId, "runId");
        if (after < 0) throw new ValidationError("after must not be negative", "after");
      } catch (error) {
        throw new GraphQLError((error as Error).message, { extensions: { code: "VALIDATION" } });
      }
      const run = await ctx.store.getRun(runId);
      if (!run) throw new GraphQLError(`Run ${JSON.stringify(runId)} does not exist`, { extensions: { code: "NOT_FOUND" } });
      const events = followRun(ctx.bus, runId, after, { lookup: (id) => ctx.store.getRun(id), pollMs: STORED_RUN_POLL_MS });
      return mapStream<RunEvent, RunEvent | CutOff>(events, freshFor(ctx), cutOffWhenTooSlow);
    },
    resolve: (event) => deliver(event),
  }),
);

builder.subscriptionField("conversationEvents", (t) =>
  t.field({
    type: RunEventInterface,
    description: "The events of every run of one conversation, live, across runs, until unsubscribed.",
    args: { conversationId: t.arg.id({ required: true }) },
    subscribe: async (_root, args, ctx) => {
      const id = String(args.conversationId);
      try {
        requireUuid(id, "conversationId");
      } catch (error) {
        throw new GraphQLError((error as Error).message, { extensions: { code: "VALIDATION" } });
      }
      if (!(await ctx.store.getConversation(id))) {
        throw new GraphQLError(`Conversation ${JSON.stringify(id)} does not exist`, { extensions: { code: "NOT_FOUND" } });
      }
      return mapStream<RunEvent, RunEvent | CutOff>(ctx.bus.subscribeConversation(id), freshFor(ctx), cutOffWhenTooSlow);
    },
    resolve: (event) => deliver(event),
  }),
);

/** Snapshots of deleted conversations, as delivered by conversationsChanged (Conversation.deleted reads it). */
const deletedSnapshots = new WeakSet<object>();

builder.prismaObjectField("Conversation", "deleted", (t) =>
  t.boolean({
    description: "True only on the last conversationsChanged notice of a deleted conversation; every query answers false.",
    resolve: (c) => deletedSnapshots.has(c),
  }),
);

function deletedConversation(snapshot: ConversationSnapshot): ConversationSnapshot {
  const copy = { ...snapshot };
  deletedSnapshots.add(copy);
  return copy;
}

/** The Conversation fields a deletion notice answers from its snapshot; every other field answers empty. */
const SNAPSHOT_FIELDS = new Set(["id", "title", "createdAt", "updatedAt", "messageCount", "deleted"]);

/** What a field of a conversation that no longer exists answers: nothing, in the shape its type allows. */
function emptyAnswer(type: GraphQLOutputType): (() => unknown) | null {
  if (!isNonNullType(type)) return () => null;
  const inner = type.ofType;
  if (isListType(inner)) return () => [];
  if (inner === GraphQLBoolean) return () => false;
  if (inner === GraphQLInt || inner === GraphQLFloat) return () => 0;
  if (isObjectType(inner) && "edges" in inner.getFields() && "pageInfo" in inner.getFields()) {
    return () => ({ edges: [], totalCount: 0, pageInfo: { hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null } });
  }
  return null;
}

/**
 * Lets a deletion notice answer every Conversation field. Its runs, thread and
 * checkpoints are gone with it, so the fields that would read them (and would
 * fail to find the row) answer empty instead: null, false, 0, [] or an empty
 * connection. Applied to the built schema, so fields other modules add to
 * Conversation are covered too.
 */
export function answerDeletedConversationsFromSnapshots(schema: GraphQLSchema): GraphQLSchema {
  const type = schema.getType("Conversation");
  if (!isObjectType(type)) throw new Error("the schema has no Conversation object type");
  for (const field of Object.values(type.getFields())) {
    if (SNAPSHOT_FIELDS.has(field.name)) continue;
    const empty = emptyAnswer(field.type);
    // A non-null scalar or object with no obvious empty value keeps its resolver
    // (test/streaming.spec.ts selects every field of a deletion notice).
    if (!empty) continue;
    const resolve = field.resolve ?? defaultFieldResolver;
    field.resolve = (parent, args, context, info) => (deletedSnapshots.has(parent) ? empty() : resolve(parent, args, context, info));
  }
  return schema;
}

builder.subscriptionField("conversationsChanged", (t) =>
  t.field({
    type: Conversation,
    description:
      "A conversation each time one is created, renamed or deleted, or a run of it starts or ends (activeRun, latestRun, messageCount, updatedAt): " +
      "what a conversation list needs. Each notice is read when it is delivered, so it shows the current state. " +
      "A deletion is the last notice of a conversation: deleted: true with its last id, title, createdAt, updatedAt and messageCount; " +
      "everything that went with it (runs, messages, checkpoints) answers empty: activeRun and latestRun null, resumable false, lists and connections empty.",
    subscribe: (_root, _args, ctx) =>
      mapStream<ConversationChange, ConversationSnapshot | CutOff>(
        ctx.bus.subscribeConversationChanges(),
        async (change) => {
          ctx.forgetReads();
          if (change.kind === "deleted") return deletedConversation(change.snapshot);
          // Null when deleted since: its deletion notice follows.
          return (await ctx.store.getConversation(change.conversationId)) ?? undefined;
        },
        cutOffWhenTooSlow,
      ),
    resolve: (conversation) => deliver(conversation),
  }),
);

export { Conversation };
