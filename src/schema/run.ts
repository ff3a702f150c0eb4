import type { ConversationRecord, RunRecord } from "../runs/store.ts";
import { builder } from "./builder.ts";
import { NodeInterface } from "./node.ts";
import { Conversation } from "./conversation.ts";
import { NotFoundError, NothingToResumeError, RunInProgressError, RunNotActiveError, ValidationError } from "./errors.ts";

export const RunStatus = builder.enumType("RunStatus", {
  values: {
    RUNNING: { value: "running" },
    COMPLETED: { value: "completed" },
    FAILED: { value: "failed" },
    CANCELLED: { value: "cancelled" },
    INTERRUPTED: { value: "interrupted" },
  } as const,
});

export const RunKind = builder.enumType("RunKind", {
  values: { START: { value: "start", description: "A new user message." }, RESUME: { value: "resume", description: "Continues the thread's pending step." } } as const,
});

export const RunErrorCode = builder.enumType("RunErrorCode", {
  values: {
    MODEL_UNAVAILABLE: { description: "Ollama could not be reached: connection refused, reset, DNS." },
    MODEL_NOT_FOUND: { description: "Ollama answered that the model is not pulled." },
    MODEL_TIMEOUT: { description: "The model sent nothing for MODEL_IDLE_TIMEOUT_MS." },
    MODEL_ERROR: { description: "Ollama reported an error." },
    RECURSION_LIMIT: { description: "The agent took more steps than AGENT_RECURSION_LIMIT." },
    CANCELLED: { description: "cancelRun stopped it." },
    INTERRUPTED: { description: "The server stopped or crashed while it ran." },
    AGENT_FAILURE: { description: "Anything else; errorMessage has the original text." },
  } as const,
});

export const Run = builder.prismaObject("Run", {
  description: "One attempt to advance a conversation's thread: started when, ended how.",
  interfaces: [NodeInterface],
  fields: (t) => ({
    id: t.exposeID("id"),
    conversation: t.relation("conversation"),
    kind: t.field({ type: RunKind, resolve: (r) => r.kind as "start" | "resume" }),
    status: t.field({ type: RunStatus, resolve: (r) => r.status as "running" }),
    input: t.exposeString("input", { nullable: true, description: "The user message; null for a resume." }),
    errorCode: t.field({ type: RunErrorCode, nullable: true, resolve: (r) => r.errorCode as "AGENT_FAILURE" | null }),
    errorMessage: t.exposeString("errorMessage", { nullable: true, description: "The original error text." }),
    partialOutput: t.exposeString("partialOutput", { nullable: true, description: "Text streamed before a failure, cancel or interruption." }),
    startedAt: t.expose("startedAt", { type: "DateTime" }),
    finishedAt: t.expose("finishedAt", { type: "DateTime", nullable: true }),
  }),
});

builder.queryField("run", (t) =>
  t.prismaField({
    type: "Run",
    nullable: true,
    args: { id: t.arg.id({ required: true }) },
    resolve: (query, _root, { id }, ctx) => ctx.prisma.run.findUnique({ ...query, where: { id: String(id) } }),
  }),
);

const StartRunInput = builder.inputType("StartRunInput", {
  fields: (t) => ({
    conversationId: t.id({ description: "Omit to start a new conversation." }),
    message: t.string({ required: true }),
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
    errors: { types: [ValidationError, NotFoundError, RunInProgressError], directResult: true, union: { name: "StartRunResult" } },
    resolve: (_root, { input }, ctx) => ctx.runs.startRun({ conversationId: input.conversationId == null ? null : String(input.conversationId), message: input.message }),
  }),
);

const ResumeRunInput = builder.inputType("ResumeRunInput", {
  fields: (t) => ({ conversationId: t.id({ required: true }) }),
});

const ResumeRunSuccess = builder.objectRef<{ run: RunRecord }>("ResumeRunSuccess").implement({
  fields: (t) => ({ run: t.field({ type: Run, resolve: (r) => r.run }) }),
});

builder.mutationField("resumeRun", (t) =>
  t.field({
    type: ResumeRunSuccess,
    description: "Starts a run that continues the thread's pending step (after a failure, cancel or interruption).",
    args: { input: t.arg({ type: ResumeRunInput, required: true }) },
    errors: { types: [ValidationError, NotFoundError, RunInProgressError, NothingToResumeError], directResult: true, union: { name: "ResumeRunResult" } },
    resolve: async (_root, { input }, ctx) => ({ run: await ctx.runs.resumeRun({ conversationId: String(input.conversationId) }) }),
  }),
);

const CancelRunInput = builder.inputType("CancelRunInput", {
  fields: (t) => ({ runId: t.id({ required: true }) }),
});

const CancelRunSuccess = builder.objectRef<{ run: RunRecord }>("CancelRunSuccess").implement({
  fields: (t) => ({ run: t.field({ type: Run, description: "The run as recorded: CANCELLED, or the status it reached first.", resolve: (r) => r.run }) }),
});

builder.mutationField("cancelRun", (t) =>
  t.field({
    type: CancelRunSuccess,
    description: "Stops a running run at once; its pending step stays resumable.",
    args: { input: t.arg({ type: CancelRunInput, required: true }) },
    errors: { types: [ValidationError, NotFoundError, RunNotActiveError], directResult: true, union: { name: "CancelRunResult" } },
    resolve: async (_root, { input }, ctx) => ({ run: await ctx.runs.cancelRun({ runId: String(input.runId) }) }),
  }),
);

