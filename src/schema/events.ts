// Subscriptions and the events they deliver: what a run and a conversation
// tell their observers, live.
import { GraphQLError } from "graphql";
import type { ConversationChange, RunEvent } from "../domain/events.ts";
import { canSee } from "../domain/principal.ts";
import { requireUuid, ValidationError } from "../domain/errors.ts";
import { SubscriberOverflowError } from "../storage/event-bus/subscriber.ts";
import { followRun, mapStream } from "../read/event-streams.ts";
import { builder } from "./builder.ts";
import { RunErrorCode, RunStatus } from "./enums.ts";
import { Checkpoint, Conversation, CustomEvent, Interrupt, RunEventInterface, type ConversationShape } from "./refs.ts";

type Of<T extends RunEvent["type"]> = Extract<RunEvent, { type: T }>;

RunEventInterface.implement({
  description: "One event of a run. seq counts from 1 within the run; after the terminal RunStatusEvent the subscription completes.",
  resolveType: (e) =>
    ({
      status: "RunStatusEvent",
      token: "TokenEvent",
      toolCall: "ToolCallEvent",
      toolResult: "ToolResultEvent",
      checkpoint: "CheckpointEvent",
      replayGap: "ReplayGapEvent",
      custom: "CustomEvent",
      interrupt: "InterruptEvent",
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
    attempt: t.int({
      description: "1 when the model asks for the call; a call in doubt that runs again is told again with its next attempt.",
      // Events stored before attempts were told are of first attempts.
      resolve: (e) => e.attempt ?? 1,
    }),
  }),
});

builder.objectRef<Of<"toolResult">>("ToolResultEvent").implement({
  interfaces: [RunEventInterface],
  fields: (t) => ({
    toolCallId: t.exposeString("toolCallId"),
    name: t.exposeString("name"),
    content: t.exposeString("content"),
    isError: t.exposeBoolean("isError"),
    attempt: t.int({ description: "The attempt the result comes from.", resolve: (e) => e.attempt ?? 1 }),
  }),
});

builder.objectRef<Of<"checkpoint">>("CheckpointEvent").implement({
  description: "LangGraph saved a checkpoint of the run's thread.",
  interfaces: [RunEventInterface],
  fields: (t) => ({
    checkpointId: t.exposeID("checkpointId"),
    checkpoint: t.field({
      type: Checkpoint,
      description: "The checkpoint just saved.",
      resolve: async (event, _a, ctx, info) => {
        const checkpoint = await ctx.reads(info.rootValue).checkpoint(event.checkpointId);
        if (!checkpoint) throw new GraphQLError(`Checkpoint ${event.checkpointId} no longer exists`, { extensions: { code: "NOT_FOUND" } });
        return checkpoint;
      },
    }),
  }),
});

CustomEvent.implement({
  description:
    "What a graph emitted through LangGraph's custom stream writer (config.writer({name, data})); stored as well, and read back as Run.customEvents after the run's events are gone.",
  interfaces: [RunEventInterface],
  fields: (t) => ({
    name: t.exposeString("name"),
    data: t.field({ type: "JSON", nullable: true, resolve: (e) => e.data }),
  }),
});

builder.objectRef<Of<"interrupt">>("InterruptEvent").implement({
  description: "The run paused on an interrupt; the terminal RunStatusEvent WAITING follows.",
  interfaces: [RunEventInterface],
  fields: (t) => ({
    interrupt: t.field({
      type: Interrupt,
      resolve: (e) => ({ ...e.interrupt, answeredByRunId: null, answer: null, answeredAt: null }),
    }),
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

/** How often a subscription to a run no instance holds a log of asks storage whether it has ended. */
const STORED_RUN_POLL_MS = 500;

builder.subscriptionType({});

builder.subscriptionField("runEvents", (t) =>
  t.field({
    type: RunEventInterface,
    description:
      "Every event of one run: the retained events with seq > after, then live, with no gap and no duplicate. Completes after the terminal RunStatusEvent.",
    args: {
      runId: t.arg.id({ required: true }),
      after: t.arg.int({ description: "The last seq already received; 0 or omitted replays from the start." }),
    },
    // Over WebSocket, one stream per distinct operation; a late subscriber first gets what it missed (src/server/ws-broadcast.ts).
    extensions: { broadcast: "replay" },
    subscribe: async (_root, args, ctx) => {
      const runId = String(args.runId);
      const after = args.after ?? 0;
      try {
        requireUuid(runId, "runId");
        if (after < 0) throw new ValidationError("after must not be negative", "after");
      } catch (error) {
        throw new GraphQLError((error as Error).message, { extensions: { code: "VALIDATION" } });
      }
      // Through the caller's read scope: another user's run is one that does not exist.
      const run = await ctx.reads(Symbol("subscribe")).run(runId);
      if (!run) throw new GraphQLError(`Run ${JSON.stringify(runId)} does not exist`, { extensions: { code: "NOT_FOUND" } });
      const events = followRun(ctx.bus, runId, after, { lookup: (id) => ctx.store.getRun(id), pollMs: STORED_RUN_POLL_MS });
      return mapStream<RunEvent, RunEvent | CutOff>(events, (event) => event, cutOffWhenTooSlow);
    },
    resolve: (event) => deliver(event),
  }),
);

builder.subscriptionField("conversationEvents", (t) =>
  t.field({
    type: RunEventInterface,
    description: "The events of every run of one conversation, live, across runs, until unsubscribed.",
    args: { conversationId: t.arg.id({ required: true }) },
    extensions: { broadcast: "live" },
    subscribe: async (_root, args, ctx) => {
      const id = String(args.conversationId);
      try {
        requireUuid(id, "conversationId");
      } catch (error) {
        throw new GraphQLError((error as Error).message, { extensions: { code: "VALIDATION" } });
      }
      if (!(await ctx.reads(Symbol("subscribe")).conversation(id))) {
        throw new GraphQLError(`Conversation ${JSON.stringify(id)} does not exist`, { extensions: { code: "NOT_FOUND" } });
      }
      return mapStream<RunEvent, RunEvent | CutOff>(await ctx.bus.subscribeConversation(id), (event) => event, cutOffWhenTooSlow);
    },
    resolve: (event) => deliver(event),
  }),
);

builder.subscriptionField("conversationsChanged", (t) =>
  t.field({
    type: Conversation,
    description:
      "A conversation each time one is created, renamed or deleted, or a run of it starts or ends (activeRun, latestRun, messageCount, updatedAt): " +
      "what a conversation list needs. Each notice is read when it is delivered, so it shows the current state. " +
      "A deletion is the last notice of a conversation: deleted: true with its last id, title, createdAt, updatedAt and messageCount; " +
      "everything that went with it (runs, messages, checkpoints) answers empty: activeRun and latestRun null, resumable false, lists and connections empty.",
    extensions: { broadcast: "live" },
    subscribe: async (_root, _args, ctx) =>
      mapStream<ConversationChange, ConversationShape | CutOff>(
        await ctx.bus.subscribeConversationChanges(),
        async (change) => {
          // Only the caller's own conversations (an admin's: every one): another user's changes never reach this stream.
          // Its runs, thread and checkpoints went with it, so every field that reads them answers empty.
          if (change.kind === "deleted") return canSee(ctx.principal, change.snapshot) ? { ...change.snapshot, deleted: true } : undefined;
          // Null when deleted since: its deletion notice follows.
          const conversation = await ctx.store.getConversation(change.conversationId);
          return conversation && canSee(ctx.principal, conversation) ? conversation : undefined;
        },
        cutOffWhenTooSlow,
      ),
    resolve: (conversation) => deliver(conversation),
  }),
);
