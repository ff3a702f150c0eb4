// Applies pending Prisma migrations (prisma/migrations/*/migration.sql) at start-up,
// recording them in Prisma's own `_prisma_migrations` table, so `prisma migrate
// status` and `prisma migrate deploy` agree with what the server did. Doing it
// in-process keeps `npm start` a single step and needs no engine binary.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { SqliteDatabase } from "./database.ts";

export const MIGRATIONS_DIR = fileURLToPath(new URL("../../../prisma/migrations", import.meta.url));

export interface MigrationResult {
  applied: string[];
}

export function migrate(db: SqliteDatabase, dir = MIGRATIONS_DIR): MigrationResult {
  db.exec(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id" TEXT PRIMARY KEY NOT NULL,
    "checksum" TEXT NOT NULL,
    "finished_at" DATETIME,
    "migration_name" TEXT NOT NULL,
    "logs" TEXT,
    "rolled_back_at" DATETIME,
    "started_at" DATETIME NOT NULL DEFAULT current_timestamp,
    "applied_steps_count" INTEGER UNSIGNED NOT NULL DEFAULT 0
  )`);
  const names = fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && fs.existsSync(path.join(dir, e.name, "migration.sql")))
    .map((e) => e.name)
    .sort();
  const applied: string[] = [];
  // A migration that rebuilds a table (SQLite's way to change a constraint) drops
  // the old one; with foreign keys on, that would cascade to the rows referring
  // to it. The pragma only takes effect outside a transaction, so it is set
  // around the migrations, and the keys are checked before they go back on.
  const foreignKeys = db.pragma("foreign_keys", { simple: true }) as number;
  db.pragma("foreign_keys = OFF");
  try {
    applyAll();
    const broken = db.pragma("foreign_key_check") as unknown[];
    if (broken.length) throw new Error(`the migrations left ${broken.length} row(s) whose foreign keys point nowhere`);
  } finally {
    if (foreignKeys) db.pragma("foreign_keys = ON");
  }
  return { applied };

  function applyAll(): void {
    for (const name of names) {
      const sql = fs.readFileSync(path.join(dir, name, "migration.sql"), "utf8");
      const checksum = crypto.createHash("sha256").update(sql).digest("hex");
      // IMMEDIATE takes the write lock first, so two processes starting together
      // apply each migration once: the second waits, then sees it recorded.
      const applyOne = db.transaction(() => {
        const done = db
          .prepare(`SELECT checksum FROM "_prisma_migrations" WHERE migration_name = ? AND finished_at IS NOT NULL AND rolled_back_at IS NULL`)
          .get(name) as { checksum: string } | undefined;
        if (done) {
          if (done.checksum !== checksum) {
            throw new Error(`migration ${name} was changed after it was applied (checksum differs)`);
          }
          return false;
        }
        const startedAt = new Date().toISOString();
        db.exec(sql);
        db.prepare(
          `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, logs, rolled_back_at, started_at, applied_steps_count)
         VALUES (?, ?, ?, ?, NULL, NULL, ?, 1)`,
        ).run(crypto.randomUUID(), checksum, new Date().toISOString(), name, startedAt);
        return true;
      });
      if (applyOne.immediate()) applied.push(name);
    }
  }
}
