// Retention in the SQLite file: finding on the reader, every delete on the
// writer, one bounded transaction per call in its turn of the write gate, so
// the write lock is held for one batch at a time and runs' writes go between
// batches. A batch looks again under BEGIN IMMEDIATE, so a run that started
// since the look keeps its thread whole.
import { NotFoundError } from "../../domain/errors.ts";
import type { ConversationRecord } from "../../domain/records.ts";
import type { SqliteDatabase } from "../sqlite/database.ts";
import { CONVERSATION_COLUMNS, formatSqliteDate, toConversationRecord, type ConversationRow } from "../sqlite/rows.ts";
import type { WriteGate } from "../sqlite/write-gate.ts";
import { countAgedSql, expiredSql, prunableSql, pruneAgedSql, threadsOverKeepSql, type Statement } from "./sql.ts";
import type { AgedTable, ExpiryPolicy, RetentionStore } from "./types.ts";

export class SqliteRetentionStore implements RetentionStore {
  readonly #gate: WriteGate;
  readonly #writer: SqliteDatabase;
  readonly #reader: SqliteDatabase;

  constructor(options: { writer: SqliteDatabase; reader: SqliteDatabase; gate: WriteGate }) {
    this.#gate = options.gate;
    this.#writer = options.writer;
    this.#reader = options.reader;
  }

  #all<R>(db: SqliteDatabase, { text, values }: Statement): R[] {
    return db.prepare(text).all(...values) as R[];
  }

  #write<T>(work: () => T): Promise<T> {
    return this.#gate.run(() => this.#writer.transaction(work).immediate());
  }

  setExpiry(conversationId: string, expiresAt: Date | null): Promise<ConversationRecord> {
    return this.#write(() => {
      const set = this.#writer.prepare(`UPDATE conversations SET expires_at = ? WHERE id = ?`);
      if (set.run(expiresAt === null ? null : formatSqliteDate(expiresAt), conversationId).changes === 0) {
        throw new NotFoundError("Conversation", conversationId);
      }
      const row = this.#writer.prepare(`SELECT ${CONVERSATION_COLUMNS} FROM conversations WHERE id = ?`).get(conversationId) as ConversationRow;
      return toConversationRecord(row);
    });
  }

  async expiredConversations(policy: ExpiryPolicy, now: Date, limit: number): Promise<string[]> {
    return this.#all<{ id: string }>(this.#reader, expiredSql("sqlite", policy, now, limit, formatSqliteDate)).map((r) => r.id);
  }

  async threadsOverKeep(keep: number, after: string | null, limit: number): Promise<string[]> {
    return this.#all<{ thread_id: string }>(this.#reader, threadsOverKeepSql("sqlite", keep, after, limit)).map((r) => r.thread_id);
  }

  async prunableCheckpoints(threadId: string, keep: number, limit: number): Promise<string[]> {
    return this.#all<{ id: string }>(this.#reader, prunableSql("sqlite", threadId, keep, limit)).map((r) => r.id);
  }

  pruneCheckpoints(threadId: string, keep: number, limit: number): Promise<Record<string, number>> {
    return this.#write(() => {
      const ids = this.#all<{ id: string }>(this.#writer, prunableSql("sqlite", threadId, keep, limit)).map((r) => r.id);
      if (ids.length === 0) return { checkpoints: 0, writes: 0 };
      const list = JSON.stringify(ids);
      const inList = `thread_id = ? AND checkpoint_ns = '' AND checkpoint_id IN (SELECT value FROM json_each(?))`;
      const writes = this.#writer.prepare(`DELETE FROM writes WHERE ${inList}`).run(threadId, list).changes;
      const checkpoints = this.#writer.prepare(`DELETE FROM checkpoints WHERE ${inList}`).run(threadId, list).changes;
      return { checkpoints, writes };
    });
  }

  async countAged(table: AgedTable, before: Date): Promise<number> {
    return Number(this.#all<{ n: number }>(this.#reader, countAgedSql("sqlite", table, formatSqliteDate(before)))[0]!.n);
  }

  pruneAged(table: AgedTable, before: Date, limit: number): Promise<number> {
    const { text, values } = pruneAgedSql("sqlite", table, formatSqliteDate(before), limit);
    return this.#write(() => this.#writer.prepare(text).run(...values).changes);
  }

  acquireLease(name: string, holder: string, now: Date, ttlMs: number): Promise<boolean> {
    return this.#write(() => {
      const taken = this.#writer
        .prepare(
          `INSERT INTO retention_leases (name, holder, expires_at) VALUES (?, ?, ?)
           ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
           WHERE retention_leases.holder = excluded.holder OR retention_leases.expires_at <= ?`,
        )
        .run(name, holder, formatSqliteDate(new Date(now.getTime() + ttlMs)), formatSqliteDate(now));
      return taken.changes > 0;
    });
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    await this.#write(() => this.#writer.prepare(`DELETE FROM retention_leases WHERE name = ? AND holder = ?`).run(name, holder));
  }

  async reclaimSpace(maxPages: number): Promise<number> {
    // Only a file made with auto_vacuum = INCREMENTAL (2) can give pages back without a full VACUUM.
    if (this.#reader.pragma("auto_vacuum", { simple: true }) !== 2) return 0;
    return this.#gate.run(() => {
      const before = this.#writer.pragma("freelist_count", { simple: true }) as number;
      if (before === 0) return 0;
      this.#writer.pragma(`incremental_vacuum(${Math.max(1, Math.floor(maxPages))})`);
      return before - (this.#writer.pragma("freelist_count", { simple: true }) as number);
    });
  }
}
