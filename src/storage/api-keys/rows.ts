// An `api_keys` row and its record, for both backends: each passes how its
// driver returns a timestamp (SQLite: ISO text; PostgreSQL: a Date).
import type { PrincipalRole } from "../../domain/principal.ts";
import type { ApiKeyRecord } from "./types.ts";

export const API_KEY_COLUMNS = "id, hash, user_id, role, label, created_at, last_used_at, revoked_at";

export interface ApiKeyRow<D> {
  id: string;
  hash: string;
  user_id: string;
  role: string;
  label: string | null;
  created_at: D;
  last_used_at: D | null;
  revoked_at: D | null;
}

export function toApiKeyRecord<D>(row: ApiKeyRow<D>, date: (value: D) => Date): ApiKeyRecord {
  return {
    id: row.id,
    hash: row.hash,
    userId: row.user_id,
    role: row.role as PrincipalRole,
    label: row.label,
    createdAt: date(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : date(row.last_used_at),
    revokedAt: row.revoked_at === null ? null : date(row.revoked_at),
  };
}
