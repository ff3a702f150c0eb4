// Run: one attempt to advance a conversation's thread, the checkpoints, messages
// and failed tasks the correlation gives it; the run query and the start,
// resume and cancel mutations.
import { GraphQLError } from "graphql";
import type { ConversationRecord, RunRecord } from "../domain/records.ts";
import {
  IdempotencyKeyReusedError,
  InterruptMismatchError,
  NotFoundError,
  NothingToResumeError,
  QuotaExceededError,
  RunInProgressError,
  RunNotActiveError,
  ValidationError,
} from "../domain/errors.ts";
import { toApiMessages } from "../read/messages.ts";
import { builder } from "./builder.ts";
import { Multitask, QueueReason, RunErrorCode, RunKind, RunStatus } from "./enums.ts";
import { Checkpoint, Conversation, CustomEvent, Interrupt, Message, Node, Run, TaskError } from "./refs.ts";
import { RunUsage } from "./usage.ts";
import { ToolCallRecord } from "./tool-call.ts";
import { MessageNode } from "./message-node.ts";
import { WebhookInput } from "./webhook.ts";

Run.implement({
  description: "One attempt to advance a conversation's thread: started when, ended how.",
  interfaces: [Node],
  fields: (t) => ({
    id: t.exposeID("id"),
    conversation: t.field({
      type: Conversation,
      resolve: async (run, _a, ctx, info) => {
        const conversation = await ctx.reads(info.rootValue).conversation(run.conversationId);
        if (!conversation) throw new GraphQLError(`Conversation ${JSON.stringify(run.conversationId)} no longer exists`, { extensions: { code: "NOT_FOUND" } });
        return conversation;
      },
    }),
    kind: t.field({ type: RunKind, resolve: (r) => r.kind }),
    status: t.field({ type: RunStatus, resolve: (r) => r.status }),
    input: t.exposeString("input", { nullable: true, description: "The user message; null for a resume or an edit." }),
    errorCode: t.field({ type: RunErrorCode, nullable: true, resolve: (r) => r.errorCode }),
    errorMessage: t.exposeString("errorMessage", { nullable: true, description: "The original error text." }),
    partialOutput: t.exposeString("partialOutput", { nullable: true, description: "Text streamed before a failure, cancel or interruption." }),
    startedAt: t.expose("startedAt", { type: "DateTime", description: "When it was asked for (a queued run's wait included)." }),
    finishedAt: t.expose("finishedAt", { type: "DateTime", nullable: true }),
    queuedAt: t.expose("queuedAt", { type: "DateTime", nullable: true, description: "When it entered the queue; null for runs from before the queue." }),
    queuePosition: t.int({
      nullable: true,
      description: "While QUEUED, its place among the runs waiting for the same model endpoint (1 is next, oldest first); null otherwise.",
      resolve: (run, _a, ctx, info) => (run.status === "queued" ? ctx.reads(info.rootValue).queuePosition(run.id) : null),
    }),
    queueReason: t.field({
      type: QueueReason,
      nullable: true,
      description: "Why it waits, while QUEUED; null otherwise.",
      resolve: (r) => (r.status === "queued" ? r.queueReason : null),
    }),
    checkpoints: t.field({
      type: [Checkpoint],
      description: "The checkpoints inside the run's window, oldest first (timestamp correlation).",
      resolve: (run, _a, ctx, info) => ctx.reads(info.rootValue).checkpointsOf(run),
    }),
    messages: t.field({
      type: [Message],
      description:
        "Messages first seen in this run's checkpoints: the user message of a start, the model's and tools' replies; for an edit, the messages it added or changed.",
      resolve: async (run, _a, ctx, info) => toApiMessages(await ctx.reads(info.rootValue).messagesOf(run)),
    }),
    usage: t.field({
      type: RunUsage,
      nullable: true,
      description: "What its model calls cost; stored when it ends (null while running).",
      resolve: (r) => r.usage,
    }),
    interrupts: t.field({
      type: [Interrupt],
      description: "The interrupts it raised (a WAITING run), and how each was answered.",
      resolve: (run, _a, ctx, info) => ctx.reads(info.rootValue).interruptsOfRun(run),
    }),
    toolCalls: t.field({
      type: [ToolCallRecord],
      description: "The tool calls it invoked (or answered from the journal after a person's decision), oldest first: one record per attempt.",
      resolve: (run, _a, ctx, info) => ctx.reads(info.rootValue).toolCallsOf(run),
    }),
    customEvents: t.field({
      type: [CustomEvent],
      description:
        "The custom events it published (a custom graph's custom stream writer), in seq order: the same events runEvents carried, stored as they streamed, so they can be read after the run's events are no longer kept (EVENT_GRACE_MS).",
      resolve: (run, _a, ctx, info) => ctx.reads(info.rootValue).customEventsOf(run),
    }),
    messageNodes: t.field({
      type: [MessageNode],
      description:
        "The graph node each message it streamed came from (its TokenEvents' node), with the seq of the message's first token, in seq order: stored as it streamed, for reading after its events are gone. A message it did not stream (a user or tool message, or one a model answered without streaming) has none.",
      resolve: (run, _a, ctx, info) => ctx.reads(info.rootValue).messageNodesOf(run),
    }),
    startCheckpoint: t.field({
      type: Checkpoint,
      nullable: true,
      description: "The checkpoint it started from (the thread's head then; a resume's writes land under it); null on an empty thread.",
      resolve: (run, _a, ctx, info) => (run.startCheckpointId ? ctx.reads(info.rootValue).checkpoint(run.startCheckpointId) : null),
    }),
    failedTasks: t.field({
      type: [TaskError],
      description: "Tasks that failed while this run worked on them (__error__ writes).",
      resolve: (run, _a, ctx, info) => ctx.reads(info.rootValue).failedTasksOf(run),
    }),
  }),
});

builder.queryField("run", (t) =>
  t.field({
    type: Run,
    nullable: true,
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx, info) => ctx.reads(info.rootValue).run(String(id)),
  }),
);

const StartRunInput = builder.inputType("StartRunInput", {
  fields: (t) => ({
    conversationId: t.id({ description: "Omit to start a new conversation." }),
    message: t.string({ required: true }),
    agent: t.string({
      description: "The agent of a new conversation (default: default). A conversation keeps its agent: for one that exists, only its own is accepted.",
    }),
    multitask: t.field({
      type: Multitask,
      description: "When the conversation has an active run: REJECT (default), ENQUEUE behind it, INTERRUPT or ROLLBACK it.",
    }),
    idempotencyKey: t.string({
      description:
        "A key the client chooses (at most 255 characters): a retry with the same key and input within 24 hours answers the first call's result and does nothing again.",
    }),
    webhook: t.field({ type: WebhookInput, description: "Where to POST when this run ends or waits (besides WEBHOOK_URL, which every run gets)." }),
  }),
});

const StartRunSuccess = builder.objectRef<{ run: RunRecord; conversation: ConversationRecord }>("StartRunSuccess").implement({
  fields: (t) => ({
    run: t.field({ type: Run, resolve: (r) => r.run }),
    conversation: t.field({ type: Conversation, resolve: (r) => r.conversation }),
  }),
});

builder.mutationField("startRun", (t) =>
  t.field({
    type: StartRunSuccess,
    description: "Records a running run and returns at once; the agent works in the background. Follow it with runEvents.",
    args: { input: t.arg({ type: StartRunInput, required: true }) },
    errors: {
      types: [ValidationError, NotFoundError, RunInProgressError, QuotaExceededError, IdempotencyKeyReusedError],
      directResult: true,
      union: { name: "StartRunResult" },
    },
    resolve: (_root, { input }, ctx) =>
      ctx.runs.startRun(
        {
          conversationId: input.conversationId == null ? null : String(input.conversationId),
          message: input.message,
          agent: input.agent,
          multitask: input.multitask,
          idempotencyKey: input.idempotencyKey,
          webhook: input.webhook,
        },
        ctx.principal,
      ),
  }),
);

const InterruptResponseInput = builder.inputType("InterruptResponseInput", {
  fields: (t) => ({
    interruptId: t.id({ required: true }),
    value: t.field({
      type: "JSON",
      description:
        'The answer. A tool approval takes {"toolCalls": [{"id", "decision": "approve" | "reject" | "edit", "reason"?, "args"?}]}; a tool in doubt takes {"decision": "retry" | "skip" | "fail", "result"?}.',
    }),
  }),
});

const ResumeRunInput = builder.inputType("ResumeRunInput", {
  fields: (t) => ({
    conversationId: t.id({ required: true }),
    responses: t.field({
      type: [InterruptResponseInput],
      description: "Answers to every pending interrupt of a WAITING conversation; omit to continue a pending step.",
    }),
    idempotencyKey: t.string({
      description:
        "A key the client chooses (at most 255 characters): a retry with the same key and input within 24 hours answers the first call's result and does nothing again.",
    }),
    webhook: t.field({ type: WebhookInput, description: "Where to POST when this run ends or waits (besides WEBHOOK_URL, which every run gets)." }),
  }),
});

const ResumeRunSuccess = builder.objectRef<{ run: RunRecord }>("ResumeRunSuccess").implement({
  fields: (t) => ({ run: t.field({ type: Run, resolve: (r) => r.run }) }),
});

builder.mutationField("resumeRun", (t) =>
  t.field({
    type: ResumeRunSuccess,
    description:
      "Starts a run that continues the thread: its pending step (after a failure, cancel or interruption), or, with responses, the interrupts it waits on.",
    args: { input: t.arg({ type: ResumeRunInput, required: true }) },
    errors: {
      types: [ValidationError, NotFoundError, RunInProgressError, NothingToResumeError, InterruptMismatchError, QuotaExceededError, IdempotencyKeyReusedError],
      directResult: true,
      union: { name: "ResumeRunResult" },
    },
    resolve: async (_root, { input }, ctx) => ({
      run: await ctx.runs.resumeRun(
        {
          conversationId: String(input.conversationId),
          responses: input.responses?.map((r) => ({ interruptId: String(r.interruptId), value: r.value ?? null })),
          idempotencyKey: input.idempotencyKey,
          webhook: input.webhook,
        },
        ctx.principal,
      ),
    }),
  }),
);

const CancelRunInput = builder.inputType("CancelRunInput", {
  fields: (t) => ({
    runId: t.id({ required: true }),
    idempotencyKey: t.string({
      description:
        "A key the client chooses (at most 255 characters): a retry with the same key and input within 24 hours answers the first call's result and does nothing again.",
    }),
  }),
});

const CancelRunSuccess = builder.objectRef<{ run: RunRecord }>("CancelRunSuccess").implement({
  fields: (t) => ({ run: t.field({ type: Run, description: "The run as recorded: CANCELLED, or the status it reached first.", resolve: (r) => r.run }) }),
});

builder.mutationField("cancelRun", (t) =>
  t.field({
    type: CancelRunSuccess,
    description: "Stops a running run at once; its pending step stays resumable.",
    args: { input: t.arg({ type: CancelRunInput, required: true }) },
    errors: { types: [ValidationError, NotFoundError, RunNotActiveError, IdempotencyKeyReusedError], directResult: true, union: { name: "CancelRunResult" } },
    resolve: async (_root, { input }, ctx) => ({
      run: await ctx.runs.cancelRun({ runId: String(input.runId), idempotencyKey: input.idempotencyKey }, ctx.principal),
    }),
  }),
);
