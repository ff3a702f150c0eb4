import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { beforeAll, afterAll, describe, expect, it } from "vitest";
import { migrate } from "../src/storage/sqlite/migrate.ts";
import { openPostgresStorage } from "../src/storage/open-postgres.ts";
import { BUSY_TIMEOUT_MS, openSqlite } from "../src/storage/sqlite/database.ts";
import { ROOT, tempDatabaseUrl } from "../testkit/app.ts";
import { postgresDatabase, SERVICES_TIMEOUT_MS } from "../testkit/services.ts";

/** `prisma migrate status` through the project's wrapper (JavaScript engines only): its output (it exits 1 while migrations are pending). */
function prismaMigrateStatus(databaseUrl: string): string {
  const result = spawnSync(process.execPath, ["scripts/prisma.mjs", "migrate", "status"], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, PATH: `${ROOT}/node_modules/.bin:${process.env.PATH}` },
    encoding: "utf8",
  });
  return `${result.stdout}${result.stderr}`;
}

describe("migrations", () => {
  it("create the database file and its folder, once, recorded as Prisma records them", () => {
    const { dir } = tempDatabaseUrl("runledger-migrate-");
    const file = path.join(dir, "nested", "deeper", "runledger.db");
    const db = openSqlite(file);
    try {
      const first = migrate(db);
      expect(first.applied.length).toBeGreaterThan(0);
      expect(migrate(db).applied).toEqual([]);
      expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
      const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map((t) => t.name);
      expect(tables).toEqual(expect.arrayContaining(["_prisma_migrations", "conversations", "runs", "run_owners"]));
      const indexes = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'runs'").all() as { name: string; sql: string }[];
      expect(indexes.find((i) => i.name === "runs_one_active_per_conversation")?.sql).toMatch(/WHERE "status" IN \('queued', 'running'\)/);
      expect(indexes.map((i) => i.name)).toContain("runs_conversation_id_started_at_idx");
      const conversationIndexes = (
        db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'conversations'").all() as { name: string }[]
      ).map((i) => i.name);
      expect(conversationIndexes).toContain("conversations_updated_at_id_idx");
      expect(conversationIndexes).not.toContain("conversations_updated_at_idx");
      const recorded = db.prepare(`SELECT migration_name, checksum, finished_at FROM "_prisma_migrations"`).all() as {
        migration_name: string;
        checksum: string;
      }[];
      expect(recorded.map((r) => r.migration_name)).toEqual(first.applied);
      const sql = fs.readFileSync(path.join(ROOT, "prisma", "migrations", first.applied[0]!, "migration.sql"));
      expect(recorded[0]!.checksum).toBe(crypto.createHash("sha256").update(sql).digest("hex"));
    } finally {
      db.close();
    }
    // Prisma's own CLI agrees that nothing is pending.
    expect(prismaMigrateStatus(`file:${file}`)).toMatch(/Database schema is up to date/);
  });

  it("refuses a migration that changed after it was applied", () => {
    const { dir, file } = tempDatabaseUrl("runledger-migrate-");
    const migrations = path.join(dir, "migrations");
    fs.mkdirSync(path.join(migrations, "001_a"), { recursive: true });
    fs.writeFileSync(path.join(migrations, "001_a", "migration.sql"), "CREATE TABLE a (x INTEGER);");
    const db = openSqlite(file);
    try {
      expect(migrate(db, migrations).applied).toEqual(["001_a"]);
      fs.writeFileSync(path.join(migrations, "001_a", "migration.sql"), "CREATE TABLE a (y INTEGER);");
      expect(() => migrate(db, migrations)).toThrow(/changed after it was applied/);
    } finally {
      db.close();
    }
  });
});

describe("PostgreSQL migrations", () => {
  let database: Awaited<ReturnType<typeof postgresDatabase>>;
  beforeAll(async () => {
    database = await postgresDatabase();
  }, SERVICES_TIMEOUT_MS);
  afterAll(() => database?.drop());

  it("are applied once and recorded so that Prisma's CLI, pointed at the same URL, finds nothing pending", async () => {
    const first = await openPostgresStorage(database.url);
    await first.close();
    const migrationsDir = path.join(ROOT, "prisma", "postgres", "migrations");
    const all = fs
      .readdirSync(migrationsDir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
    expect(first.migrated).toEqual(all);
    const again = await openPostgresStorage(database.url);
    await again.close();
    expect(again.migrated).toEqual([]);
    const status = prismaMigrateStatus(database.url);
    // The CLI read the Postgres schema and migrations, through the Postgres adapter.
    expect(status).toContain(`Prisma schema loaded from ${path.join("prisma", "postgres", "schema.prisma")}`);
    expect(status).toContain(`"@prisma/adapter-pg"`);
    expect(status).toMatch(new RegExp(`${all.length} migrations found`));
    expect(status).toMatch(/Database schema is up to date/);
  });
});

describe("connections", () => {
  it("use WAL and a busy timeout, the writer and the read-only reader alike", () => {
    const { file } = tempDatabaseUrl("runledger-pragmas-");
    const writer = openSqlite(file);
    migrate(writer);
    const reader = openSqlite(file, { readonly: true });
    try {
      for (const db of [writer, reader]) {
        expect(db.pragma("busy_timeout", { simple: true })).toBe(BUSY_TIMEOUT_MS);
        expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
        expect(db.pragma("foreign_keys", { simple: true })).toBe(1);
      }
      expect(() => reader.prepare("DELETE FROM conversations").run()).toThrow(/readonly/);
    } finally {
      reader.close();
      writer.close();
    }
  });

  it("upgrade a database made by an earlier release, keeping its rows", () => {
    const { dir, file } = tempDatabaseUrl("runledger-migrate-");
    const all = fs
      .readdirSync(path.join(ROOT, "prisma", "migrations"), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
    expect(all.length).toBeGreaterThan(1);
    const earlier = path.join(dir, "migrations");
    fs.cpSync(path.join(ROOT, "prisma", "migrations", all[0]!), path.join(earlier, all[0]!), { recursive: true });
    const db = openSqlite(file);
    try {
      expect(migrate(db, earlier).applied).toEqual([all[0]]);
      db.prepare(
        "INSERT INTO conversations (id, title, created_at, updated_at) VALUES ('c1', 'kept', '2026-11-30T14:02:00.000+00:00', '2026-11-30T14:02:00.000+00:00')",
      ).run();
      expect(migrate(db).applied).toEqual(all.slice(1));
      expect(db.prepare("SELECT title FROM conversations WHERE id = 'c1'").get()).toEqual({ title: "kept" });
    } finally {
      db.close();
    }
  });
});
