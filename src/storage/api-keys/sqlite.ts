// API keys in the SQLite file: writes on the writer connection, each in its turn
// of the write gate (the gate every write of the file shares); reads on the
// read-only reader connection.
import { NotFoundError } from "../../domain/errors.ts";
import type { SqliteDatabase } from "../sqlite/database.ts";
import { formatSqliteDate, parseSqliteDate } from "../sqlite/rows.ts";
import type { WriteGate } from "../sqlite/write-gate.ts";
import { API_KEY_COLUMNS, toApiKeyRecord, type ApiKeyRow } from "./rows.ts";
import type { ApiKeyRecord, ApiKeyStore, NewApiKey } from "./types.ts";

type Row = ApiKeyRow<string | number>;
const toRecord = (row: Row) => toApiKeyRecord(row, parseSqliteDate);

export class SqliteApiKeyStore implements ApiKeyStore {
  readonly #gate: WriteGate;
  readonly #w;
  readonly #r;

  /** `writer` and `reader` are connections to the migrated file; `gate` orders every write of the writer connection. */
  constructor(options: { writer: SqliteDatabase; reader: SqliteDatabase; gate: WriteGate }) {
    this.#gate = options.gate;
    const { writer, reader } = options;
    this.#w = {
      insert: writer.prepare<[string, string, string, string, string | null, string]>(
        `INSERT INTO api_keys (id, hash, user_id, role, label, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
      ),
      revoke: writer.prepare<[string, string]>(`UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`),
      touch: writer.prepare<[string, string, string]>(`UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`),
      get: writer.prepare<[string], Row>(`SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE id = ?`),
    };
    this.#r = {
      byHash: reader.prepare<[string], Row>(`SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE hash = ?`),
      all: reader.prepare<[], Row>(`SELECT ${API_KEY_COLUMNS} FROM api_keys ORDER BY created_at, id`),
    };
  }

  create(key: NewApiKey): Promise<ApiKeyRecord> {
    return this.#gate.run(() => {
      this.#w.insert.run(key.id, key.hash, key.userId, key.role, key.label, formatSqliteDate(key.createdAt));
      return toRecord(this.#w.get.get(key.id)!);
    });
  }

  async findByHash(hash: string): Promise<ApiKeyRecord | null> {
    const row = this.#r.byHash.get(hash);
    return row ? toRecord(row) : null;
  }

  async list(): Promise<ApiKeyRecord[]> {
    return this.#r.all.all().map(toRecord);
  }

  revoke(id: string, at: Date): Promise<ApiKeyRecord> {
    return this.#gate.run(() => {
      if (this.#w.revoke.run(formatSqliteDate(at), id).changes === 0) throw new NotFoundError("ApiKey", id);
      return toRecord(this.#w.get.get(id)!);
    });
  }

  touch(id: string, at: Date): Promise<void> {
    const when = formatSqliteDate(at);
    return this.#gate.run(() => void this.#w.touch.run(when, id, when));
  }
}
