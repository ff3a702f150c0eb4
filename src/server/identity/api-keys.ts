// API keys: `rlk_` and 32 random bytes in base64url. Only the SHA-256 of a key
// is stored. A slow password hash (bcrypt, scrypt) guards guessable secrets; a
// key of 256 random bits cannot be guessed, so one fast hash is as safe and lets
// every request be checked against the database without a CPU cost.
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { UnauthenticatedError } from "../../domain/errors.ts";
import type { Principal, PrincipalRole } from "../../domain/principal.ts";
import type { ApiKeyRecord, ApiKeyStore } from "../../storage/api-keys/types.ts";
import { RESERVED_PRINCIPAL_IDS } from "./jwt.ts";

export const API_KEY_PREFIX = "rlk_";
const API_KEY_SHAPE = /^rlk_[A-Za-z0-9_-]{43}$/;

/** A new key and the hash to store; the key itself is shown once and kept nowhere. */
export function generateApiKey(): { key: string; hash: string } {
  const key = `${API_KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
  return { key, hash: hashApiKey(key) };
}

/** SHA-256 of the whole key, lower-case hex: what the `api_keys` table holds. */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** Whether a credential looks like an API key (the prefix says which verifier to ask). */
export function isApiKey(credential: string): boolean {
  return credential.startsWith(API_KEY_PREFIX);
}

/** Why a user id cannot have a key: it is another source's (see RESERVED_PRINCIPAL_IDS); null when it can. */
export function reservedUserId(userId: string): string | null {
  if (!RESERVED_PRINCIPAL_IDS.has(userId)) return null;
  return `user id "${userId}" is reserved for ${userId === "admin" ? "API_TOKEN" : "the local developer"}: a key made for it would act as that principal; choose another id (a key of any id can be an admin's)`;
}

// The hash of the key a principal was verified from, for checking it again on a
// live stream (a WebSocket, an SSE response) after it was revoked.
const keyHashes = new WeakMap<Principal, string>();

/** The stored hash of the API key the principal was verified from; undefined for other sources. */
export function apiKeyHashOf(principal: Principal): string | undefined {
  return keyHashes.get(principal);
}

/** Makes and stores a key for a user; answers the key (to show once) and its record. */
export async function createApiKey(
  store: ApiKeyStore,
  input: { userId: string; role: PrincipalRole; label: string | null; now?: Date },
): Promise<{ key: string; record: ApiKeyRecord }> {
  const reserved = reservedUserId(input.userId);
  if (reserved) throw new Error(reserved);
  const { key, hash } = generateApiKey();
  const record = await store.create({ id: randomUUID(), hash, userId: input.userId, role: input.role, label: input.label, createdAt: input.now ?? new Date() });
  return { key, record };
}

export type ApiKeyVerifier = (key: string) => Promise<Principal>;

export interface ApiKeyVerifierOptions {
  /** How seldom a key's last use is written, per key; default 60000 (a minute). */
  touchIntervalMs?: number;
  /** Told when recording a key's last use fails; the request goes on regardless. */
  onTouchError?: (error: unknown) => void;
  /** Told when a key made before user ids were reserved names one (it is refused). */
  onReserved?: (record: ApiKeyRecord, why: string) => void;
  now?: () => Date;
}

/**
 * Checks a key against the database on every call, so a key revoked on any
 * instance is refused at once everywhere. Its last use is written at most once
 * per interval per key, in the background: a failed write never fails the request.
 */
export function createApiKeyVerifier(store: ApiKeyStore, options: ApiKeyVerifierOptions = {}): ApiKeyVerifier {
  const interval = options.touchIntervalMs ?? 60_000;
  const now = options.now ?? (() => new Date());
  // When this instance last wrote each key's last use (the stored value covers other instances).
  const touched = new Map<string, number>();
  return async (key) => {
    // The shape is checked first, so a mistyped key costs no query.
    if (!API_KEY_SHAPE.test(key)) throw new UnauthenticatedError("the API key is malformed (rlk_ followed by 43 characters)");
    const record = await store.findByHash(hashApiKey(key));
    if (!record) throw new UnauthenticatedError("the API key is unknown");
    if (record.revokedAt) throw new UnauthenticatedError(`the API key ${record.id} was revoked at ${record.revokedAt.toISOString()}`);
    const reserved = reservedUserId(record.userId);
    if (reserved) {
      options.onReserved?.(record, reserved);
      throw new UnauthenticatedError(`the API key ${record.id} is for a reserved user id; ask the operator for a new key`);
    }
    const at = now();
    const last = Math.max(touched.get(record.id) ?? 0, record.lastUsedAt?.getTime() ?? 0);
    if (at.getTime() - last >= interval) {
      // A key is used until it is revoked, so this map holds only keys in use; keep it bounded anyway.
      if (touched.size >= 10_000) touched.clear();
      touched.set(record.id, at.getTime());
      store.touch(record.id, at).catch((error) => options.onTouchError?.(error));
    }
    const principal: Principal = { id: record.userId, role: record.role, source: "api-key", expiresAt: null, claims: {} };
    keyHashes.set(principal, record.hash);
    return principal;
  };
}
