// Refusals the API returns as typed results (the Error types of the GraphQL
// contract). Thrown by services before anything is written.

export type ApiErrorCode =
  "VALIDATION" | "NOT_FOUND" | "RUN_IN_PROGRESS" | "NOTHING_TO_RESUME" | "RUN_NOT_ACTIVE" | "INTERRUPT_MISMATCH" | "QUOTA_EXCEEDED" | "IDEMPOTENCY_KEY_REUSED";

export abstract class ApiError extends Error {
  abstract readonly code: ApiErrorCode;
}

export class ValidationError extends ApiError {
  override name = "ValidationError";
  readonly code = "VALIDATION" as const;
  constructor(
    message: string,
    /** The input field at fault, for example "message". */
    readonly field: string,
  ) {
    super(message);
  }
}

export class NotFoundError extends ApiError {
  override name = "NotFoundError";
  readonly code = "NOT_FOUND" as const;
  constructor(
    readonly entity: "Conversation" | "Run" | "Checkpoint" | "ApiKey" | "Schedule",
    readonly id: string,
  ) {
    super(`${entity} ${JSON.stringify(id)} does not exist`);
  }
}

export class RunInProgressError extends ApiError {
  override name = "RunInProgressError";
  readonly code = "RUN_IN_PROGRESS" as const;
  constructor(
    readonly conversationId: string,
    readonly activeRunId: string | null,
  ) {
    super(`conversation ${conversationId} already has a running run${activeRunId ? ` (${activeRunId})` : ""}; wait for it or cancel it`);
  }
}

export class NothingToResumeError extends ApiError {
  override name = "NothingToResumeError";
  readonly code = "NOTHING_TO_RESUME" as const;
  constructor(readonly conversationId: string) {
    super(`conversation ${conversationId} has no pending step to resume (its thread's next is empty)`);
  }
}

export class RunNotActiveError extends ApiError {
  override name = "RunNotActiveError";
  readonly code = "RUN_NOT_ACTIVE" as const;
  constructor(
    readonly runId: string,
    readonly status: string,
  ) {
    super(`run ${runId} is not running (status ${status})`);
  }
}

export class InterruptMismatchError extends ApiError {
  override name = "InterruptMismatchError";
  readonly code = "INTERRUPT_MISMATCH" as const;
  constructor(
    readonly conversationId: string,
    /** The interrupts waiting for an answer. */
    readonly pendingInterruptIds: string[],
    message: string,
  ) {
    super(message);
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Every id in the API (conversation, run, checkpoint) is a UUID. */
export function isUuid(id: string): boolean {
  return UUID.test(id);
}

/** Ids are UUIDs; anything else is refused before a query runs. */
export function requireUuid(id: string, field: string): void {
  if (!isUuid(id)) throw new ValidationError(`${field} must be a UUID, got ${JSON.stringify(id.slice(0, 80))}`, field);
}

/**
 * Not a refusal of the request: this server is stopping and starts no more runs.
 * Clients get a GraphQL error with code SHUTTING_DOWN and HTTP 503 (src/plugins/errors.ts),
 * so they can retry on another instance or once this one is back. Nothing was written.
 */
export class ShuttingDownError extends Error {
  override name = "ShuttingDownError";
  readonly code = "SHUTTING_DOWN" as const;
  constructor() {
    super("the server is shutting down and starts no new runs; retry on another instance or once it is back");
  }
}

/** A principal at one of its quotas: nothing was written; try again after `retryAfterSeconds`. */
export class QuotaExceededError extends ApiError {
  override name = "QuotaExceededError";
  readonly code = "QUOTA_EXCEEDED" as const;
  constructor(
    /** The quota reached, named by its variable: QUOTA_ACTIVE_RUNS or QUOTA_RUNS_PER_MINUTE. */
    readonly limit: "QUOTA_ACTIVE_RUNS" | "QUOTA_RUNS_PER_MINUTE",
    readonly retryAfterSeconds: number,
    message: string,
  ) {
    super(message);
  }
}

/** The idempotency key was used, within its 24 hours, for another operation or another input: nothing was written. */
export class IdempotencyKeyReusedError extends ApiError {
  override name = "IdempotencyKeyReusedError";
  readonly code = "IDEMPOTENCY_KEY_REUSED" as const;
  constructor(
    readonly idempotencyKey: string,
    /** The operation the key was first used for. */
    readonly operation: string,
  ) {
    super(`idempotency key ${JSON.stringify(idempotencyKey)} was already used for ${operation} with another input; use a new key for a new request`);
  }
}

/**
 * The caller did not prove who it is: no credential where one is required, or
 * one that does not verify. The message says why (expired, wrong audience, an
 * unknown or revoked key, ...) and never repeats the credential. Like
 * ShuttingDownError it refuses the request itself, not one mutation's input, so
 * it is no typed result: clients get a GraphQL error with code UNAUTHENTICATED
 * (HTTP 401; a WebSocket is closed with 4401). Nothing was read or written.
 */
export class UnauthenticatedError extends Error {
  override name = "UnauthenticatedError";
  readonly code = "UNAUTHENTICATED" as const;
}
