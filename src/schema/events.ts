// Subscriptions: what a run and a conversation tell their observers, live.
import { GraphQLError } from "graphql";
import type { RunEvent } from "../events/types.ts";
import { builder } from "./builder.ts";
import { RunErrorCode, RunStatus } from "./run.ts";
import { Conversation } from "./conversation.ts";
import { requireUuid, ValidationError } from "../runs/errors.ts";

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

/** Yields from a source, but rejects an unknown id up front as a GraphQL error. */
async function* runEvents(ctx: import("../context.ts").Context, runId: string, after: number): AsyncGenerator<RunEvent> {
  const live = ctx.bus.subscribeRun(runId, after);
  if (live) {
    yield* live;
    return;
  }
  // No live log here: the run finished long enough ago (or runs in another
  // process). The database answers with the terminal event once there is one.
  for (;;) {
    const run = await ctx.store.getRun(runId);
    if (!run) return;
    if (run.status !== "running") {
      if (run.lastEventSeq > after) {
        yield {
          type: "status",
          status: run.status as "completed",
          errorCode: run.errorCode,
          errorMessage: run.errorMessage,
          seq: run.lastEventSeq,
          runId,
          conversationId: run.conversationId,
          at: run.finishedAt ?? new Date(),
        };
      }
      return;
    }
    const again = ctx.bus.subscribeRun(runId, after);
    if (again) {
      yield* again;
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

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
      return runEvents(ctx, runId, after);
    },
    resolve: (event) => event,
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
      return ctx.bus.subscribeConversation(id);
    },
    resolve: (event) => event,
  }),
);

export { Conversation };
