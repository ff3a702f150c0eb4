// The Error interface and one object type per refusal. Mutations list the ones
// they can return; the errors plugin turns a thrown instance into that member
// of the mutation's result union.
import {
  ApiError,
  IdempotencyKeyReusedError,
  InterruptMismatchError,
  NotFoundError,
  NothingToResumeError,
  QuotaExceededError,
  RunInProgressError,
  RunNotActiveError,
  ValidationError,
} from "../domain/errors.ts";
import { builder } from "./builder.ts";
import { ErrorCode } from "./enums.ts";

export const ErrorInterface = builder.interfaceRef<ApiError>("Error").implement({
  description: "A refusal: the request was understood and nothing was changed.",
  fields: (t) => ({
    code: t.field({ type: ErrorCode, resolve: (e) => e.code }),
    message: t.exposeString("message"),
  }),
});

builder.objectType(ValidationError, {
  name: "ValidationError",
  description: "The input is malformed: blank, too long, or not a valid id.",
  interfaces: [ErrorInterface],
  fields: (t) => ({ field: t.exposeString("field", { description: "The input field at fault." }) }),
});

builder.objectType(NotFoundError, {
  name: "NotFoundError",
  description: "No conversation or run has the id given.",
  interfaces: [ErrorInterface],
  fields: (t) => ({
    entity: t.exposeString("entity", { description: "What was looked for: Conversation, Run or Checkpoint." }),
    // Not `id`: Relay keys records by `id` and adds it to every selection on a
    // type that has one, so this error would overwrite the record of the
    // conversation it names. Only Node types have an `id`.
    entityId: t.id({ description: "The id that names no conversation or run.", resolve: (e) => e.id }),
  }),
});

builder.objectType(RunInProgressError, {
  name: "RunInProgressError",
  description: "The conversation already has a running run; one at a time.",
  interfaces: [ErrorInterface],
  fields: (t) => ({
    conversationId: t.exposeID("conversationId"),
    activeRunId: t.exposeID("activeRunId", { nullable: true }),
  }),
});

builder.objectType(NothingToResumeError, {
  name: "NothingToResumeError",
  description: "The thread has no pending step (`next` is empty).",
  interfaces: [ErrorInterface],
  fields: (t) => ({ conversationId: t.exposeID("conversationId") }),
});

builder.objectType(RunNotActiveError, {
  name: "RunNotActiveError",
  description: "The run has already finished.",
  interfaces: [ErrorInterface],
  fields: (t) => ({ runId: t.exposeID("runId") }),
});

builder.objectType(InterruptMismatchError, {
  name: "InterruptMismatchError",
  description:
    "The answers do not match what the thread waits for: an interrupt that is not pending, one left unanswered, or a plain resume of a thread that waits for answers.",
  interfaces: [ErrorInterface],
  fields: (t) => ({
    conversationId: t.exposeID("conversationId"),
    pendingInterruptIds: t.exposeIDList("pendingInterruptIds", { description: "The interrupts the thread waits on now." }),
  }),
});

builder.objectType(QuotaExceededError, {
  name: "QuotaExceededError",
  description: "The caller is at one of its quotas (runs active at once, or writes per minute: runs, edits and forks); nothing was written.",
  interfaces: [ErrorInterface],
  fields: (t) => ({
    limit: t.exposeString("limit", { description: "The quota reached, by its variable: QUOTA_ACTIVE_RUNS or QUOTA_RUNS_PER_MINUTE." }),
    retryAfterSeconds: t.exposeInt("retryAfterSeconds", { description: "When to try again." }),
  }),
});

builder.objectType(IdempotencyKeyReusedError, {
  name: "IdempotencyKeyReusedError",
  description: "The idempotency key was already used, within its 24 hours, for another operation or input. Nothing was written.",
  interfaces: [ErrorInterface],
  fields: (t) => ({
    idempotencyKey: t.exposeString("idempotencyKey"),
    operation: t.exposeString("operation", { description: "The mutation the key was first used for." }),
  }),
});

export {
  ValidationError,
  NotFoundError,
  RunInProgressError,
  NothingToResumeError,
  RunNotActiveError,
  InterruptMismatchError,
  QuotaExceededError,
  IdempotencyKeyReusedError,
};
