// Applies runledger's Postgres migrations (prisma/postgres/migrations) and sets
// up LangGraph's tables, at start-up, by whichever instance starts first: an
// advisory lock makes concurrent starts take turns, so each migration is applied
// once. Each is recorded in Prisma's `_prisma_migrations` table as Prisma records
// it (same checksum), so `prisma migrate status` agrees. (`prisma migrate deploy`
// cannot run here: with a driver adapter it fails to read Postgres's catalogue.)
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { PostgresPool } from "./database.ts";
import type { RunledgerPostgresSaver } from "./saver.ts";

export const POSTGRES_MIGRATIONS_DIR = fileURLToPath(new URL("../../../prisma/postgres/migrations", import.meta.url));

/** The advisory lock key all instances take while migrating ("runl" in ASCII). */
const MIGRATION_LOCK = 0x72756e6c;

export async function migratePostgres(pool: PostgresPool, saver: RunledgerPostgresSaver, dir = POSTGRES_MIGRATIONS_DIR): Promise<{ applied: string[] }> {
  const client = await pool.connect();
  const applied: string[] = [];
  try {
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
    await client.query(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
      "id" VARCHAR(36) PRIMARY KEY NOT NULL,
      "checksum" VARCHAR(64) NOT NULL,
      "finished_at" TIMESTAMPTZ,
      "migration_name" VARCHAR(255) NOT NULL,
      "logs" TEXT,
      "rolled_back_at" TIMESTAMPTZ,
      "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
      "applied_steps_count" INTEGER NOT NULL DEFAULT 0
    )`);
    const names = fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory() && fs.existsSync(path.join(dir, e.name, "migration.sql")))
      .map((e) => e.name)
      .sort();
    for (const name of names) {
      const sql = fs.readFileSync(path.join(dir, name, "migration.sql"), "utf8");
      const checksum = crypto.createHash("sha256").update(sql).digest("hex");
      const { rows } = await client.query<{ checksum: string }>(
        `SELECT checksum FROM "_prisma_migrations" WHERE migration_name = $1 AND finished_at IS NOT NULL AND rolled_back_at IS NULL`,
        [name],
      );
      if (rows[0]) {
        if (rows[0].checksum !== checksum) throw new Error(`migration ${name} was changed after it was applied (checksum differs)`);
        continue;
      }
      const startedAt = new Date();
      await client.query("BEGIN");
      try {
        await client.query(sql);
        await client.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, logs, rolled_back_at, started_at, applied_steps_count)
           VALUES ($1, $2, now(), $3, NULL, NULL, $4, 1)`,
          [crypto.randomUUID(), checksum, name, startedAt],
        );
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        throw error;
      }
      applied.push(name);
    }
    // LangGraph's own tables, under the same lock (its set-up takes none).
    await saver.setup();
    // Run windows are ranges of checkpoint ids compared byte by byte: an index in that order serves them.
    await client.query(
      `CREATE INDEX IF NOT EXISTS "checkpoints_thread_id_checkpoint_id_c_idx" ON checkpoints (thread_id, checkpoint_ns, (checkpoint_id COLLATE "C"))`,
    );
  } finally {
    await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]).catch(() => {});
    client.release();
  }
  return { applied };
}
