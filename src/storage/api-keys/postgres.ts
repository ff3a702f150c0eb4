// API keys on PostgreSQL: one statement per call on the pool, so a revoke on
// one instance is what every instance reads next.
import { NotFoundError } from "../../domain/errors.ts";
import type { PostgresPool } from "../postgres/database.ts";
import { API_KEY_COLUMNS, toApiKeyRecord, type ApiKeyRow } from "./rows.ts";
import type { ApiKeyRecord, ApiKeyStore, NewApiKey } from "./types.ts";

type Row = ApiKeyRow<Date>;
const toRecord = (row: Row) => toApiKeyRecord(row, (date) => date);

const SQL = {
  insert: `INSERT INTO api_keys (id, hash, user_id, role, label, created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${API_KEY_COLUMNS}`,
  byHash: `SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE hash = $1`,
  all: `SELECT ${API_KEY_COLUMNS} FROM api_keys ORDER BY created_at, id`,
  revoke: `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2 RETURNING ${API_KEY_COLUMNS}`,
  touch: `UPDATE api_keys SET last_used_at = $1 WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $1)`,
};

export class PostgresApiKeyStore implements ApiKeyStore {
  readonly #pool: PostgresPool;

  constructor(pool: PostgresPool) {
    this.#pool = pool;
  }

  async create(key: NewApiKey): Promise<ApiKeyRecord> {
    const { rows } = await this.#pool.query<Row>({
      name: "runledger_apiKeys_insert",
      text: SQL.insert,
      values: [key.id, key.hash, key.userId, key.role, key.label, key.createdAt],
    });
    return toRecord(rows[0]!);
  }

  async findByHash(hash: string): Promise<ApiKeyRecord | null> {
    const { rows } = await this.#pool.query<Row>({ name: "runledger_apiKeys_byHash", text: SQL.byHash, values: [hash] });
    return rows[0] ? toRecord(rows[0]) : null;
  }

  async list(): Promise<ApiKeyRecord[]> {
    const { rows } = await this.#pool.query<Row>({ name: "runledger_apiKeys_all", text: SQL.all });
    return rows.map(toRecord);
  }

  async revoke(id: string, at: Date): Promise<ApiKeyRecord> {
    const { rows } = await this.#pool.query<Row>({ name: "runledger_apiKeys_revoke", text: SQL.revoke, values: [at, id] });
    if (!rows[0]) throw new NotFoundError("ApiKey", id);
    return toRecord(rows[0]);
  }

  async touch(id: string, at: Date): Promise<void> {
    await this.#pool.query({ name: "runledger_apiKeys_touch", text: SQL.touch, values: [at, id] });
  }
}
