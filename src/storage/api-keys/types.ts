// The API keys seam: the `api_keys` table. A key itself is never stored, only
// the SHA-256 of it (src/server/identity/api-keys.ts makes and hashes keys), so
// the table can be read without giving anyone a way in.
import type { PrincipalRole } from "../../domain/principal.ts";

export interface ApiKeyRecord {
  /** A UUID: what `keys list` shows and `keys revoke` takes. */
  id: string;
  /** SHA-256 of the whole key, lower-case hex; unique. */
  hash: string;
  /** The user the key speaks for: the owner of what it creates. */
  userId: string;
  role: PrincipalRole;
  /** Free text to tell keys apart ("ci", "laptop"); null when none was given. */
  label: string | null;
  createdAt: Date;
  /** When the key last opened a request, to the minute; null if never. */
  lastUsedAt: Date | null;
  /** When it was revoked; a revoked key opens nothing. */
  revokedAt: Date | null;
}

export type NewApiKey = Pick<ApiKeyRecord, "id" | "hash" | "userId" | "role" | "label" | "createdAt">;

export interface ApiKeyStore {
  /** Stores a new key; a hash or id already stored is refused (the database's unique constraints). */
  create(key: NewApiKey): Promise<ApiKeyRecord>;
  /** The key with this hash, revoked or not; null when there is none. */
  findByHash(hash: string): Promise<ApiKeyRecord | null>;
  /** Every key, revoked ones too, oldest first. */
  list(): Promise<ApiKeyRecord[]>;
  /** Revokes the key and answers it; revoking it again keeps the first time. Throws NotFoundError("ApiKey") for an unknown id. */
  revoke(id: string, at: Date): Promise<ApiKeyRecord>;
  /** Records that the key was used at `at`; nothing happens for an unknown id. */
  touch(id: string, at: Date): Promise<void>;
}
