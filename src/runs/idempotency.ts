// Idempotency keys: a client that retries a mutation after a dropped connection
// sends the same key, and gets the first call's result instead of a second run.
// The key is recorded with what it created, in the same transaction, per
// principal (one user's key never meets another's); the same key with another
// input is refused, as a mistake, not silently answered.
import { createHash } from "node:crypto";
import { ValidationError } from "../domain/errors.ts";
import type { IdempotencyRecord } from "../domain/records.ts";

export const IDEMPOTENCY_KEY_MAX_CHARS = 255;

/** The key, checked: 1 to 255 characters, printable. */
export function checkIdempotencyKey(key: string): string {
  if (key.length === 0 || key.trim().length === 0) throw new ValidationError("idempotencyKey must not be blank", "idempotencyKey");
  if (key.length > IDEMPOTENCY_KEY_MAX_CHARS)
    throw new ValidationError(`idempotencyKey is ${key.length} characters; the limit is ${IDEMPOTENCY_KEY_MAX_CHARS}`, "idempotencyKey");
  if (/[\u0000-\u001f\u007f]/.test(key)) throw new ValidationError("idempotencyKey must not contain control characters", "idempotencyKey");
  return key;
}

/** What makes two calls the same: the operation and its input, keys in a fixed order. */
export function requestHash(operation: IdempotencyRecord["operation"], input: Record<string, unknown>): string {
  return createHash("sha256").update(stableJson({ operation, input })).digest("hex");
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value ?? null);
}
