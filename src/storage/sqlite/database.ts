// Opening the SQLite file: every connection gets WAL and a busy timeout, so
// readers never block the writer and concurrent writers (in this process or
// another) wait instead of failing with SQLITE_BUSY.
import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";

/** How long a connection waits for another writer's lock before SQLITE_BUSY. */
export const BUSY_TIMEOUT_MS = 10_000;

export type SqliteDatabase = Database.Database;

export function openSqlite(file: string, options: { readonly?: boolean } = {}): SqliteDatabase {
  if (!options.readonly) fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file, { readonly: options.readonly ?? false, timeout: BUSY_TIMEOUT_MS });
  // A new file can give pages freed by retention back to the file system (docs/retention.md). Only
  // before its first table, and before WAL; an existing file keeps its mode (changing it needs a VACUUM).
  if (!db.readonly && (db.prepare("SELECT count(*) AS n FROM sqlite_master").get() as { n: number }).n === 0) db.pragma("auto_vacuum = INCREMENTAL");
  applyPragmas(db);
  return db;
}

export function applyPragmas(db: SqliteDatabase): void {
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  if (!db.readonly) db.pragma("journal_mode = WAL");
  // WAL makes NORMAL durable against process crashes; only an OS crash can lose the last commits.
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
}
