// Which migrations a database still lacks, read without applying any: what
// `runledger migrate --check` reports before a deployment's upgrade. The
// migrations are Prisma's folders (prisma/migrations for SQLite,
// prisma/postgres/migrations for PostgreSQL); a database records those applied
// in `_prisma_migrations`, as sqlite/migrate.ts and postgres/migrate.ts write it.
import fs from "node:fs";
import path from "node:path";
import type { Config } from "../config.ts";
import { openSqlite } from "./sqlite/database.ts";
import { connectPostgres } from "./postgres/database.ts";
import { MIGRATIONS_DIR } from "./sqlite/migrate.ts";
import { POSTGRES_MIGRATIONS_DIR } from "./postgres/migrate.ts";

/** The migration folders in `dir`, oldest first (their names start with a timestamp). */
export function migrationNames(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && fs.existsSync(path.join(dir, e.name, "migration.sql")))
    .map((e) => e.name)
    .sort();
}

const APPLIED = `SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`;

/** The migrations the configured database has not applied yet, oldest first; all of them for a database that does not exist yet. */
export async function pendingMigrations(config: Pick<Config, "databaseKind" | "databasePath" | "databaseUrl">): Promise<string[]> {
  if (config.databaseKind === "postgres") {
    // An unreachable server is DATABASE_URL's one-line refusal, as at start-up.
    const pool = await connectPostgres(config.databaseUrl);
    try {
      const exists = await pool.query(`SELECT to_regclass('"_prisma_migrations"') IS NOT NULL AS present`);
      const applied = exists.rows[0]?.present ? (await pool.query<{ migration_name: string }>(APPLIED)).rows.map((r) => r.migration_name) : [];
      return migrationNames(POSTGRES_MIGRATIONS_DIR).filter((name) => !applied.includes(name));
    } finally {
      await pool.end();
    }
  }
  const names = migrationNames(MIGRATIONS_DIR);
  if (!fs.existsSync(config.databasePath)) return names;
  const db = openSqlite(config.databasePath, { readonly: true });
  try {
    const table = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_prisma_migrations'`).get();
    const applied = table ? (db.prepare(APPLIED).all() as { migration_name: string }[]).map((r) => r.migration_name) : [];
    return names.filter((name) => !applied.includes(name));
  } finally {
    db.close();
  }
}
