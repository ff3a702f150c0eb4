// The conversation list read model against Prisma's own answers: every page
// query Pothos's connection helpers can produce (first/after, last/before, an
// unknown cursor) must return exactly the rows Prisma's findMany returns, ties
// in updatedAt included.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDatabaseUrl } from "./support/app.ts";
import { openSqlite, type SqliteDatabase } from "../src/db/sqlite.ts";
import { migrate } from "../src/db/migrate.ts";
import { createPrismaClient, type PrismaClient } from "../src/db/prisma.ts";
import { SqliteConversationListReadModel } from "../src/read/conversation-list-sqlite.ts";
import { formatSqliteDate, parseSqliteDate } from "../src/db/rows.ts";
import type { ConversationListReadModel, ConversationPageQuery } from "../src/read/conversation-list.ts";

const ORDER = [{ updatedAt: "desc" as const }, { id: "desc" as const }];

describe("SqliteConversationListReadModel", () => {
  let db: SqliteDatabase;
  let prisma: PrismaClient;
  let model: ConversationListReadModel;
  let ids: string[];

  beforeAll(async () => {
    const { file } = tempDatabaseUrl("runledger-list-");
    db = openSqlite(file);
    migrate(db);
    prisma = createPrismaClient(file);
    model = SqliteConversationListReadModel.open(file);
    // 60 conversations over 12 distinct updatedAt values, so most sort keys tie and the id decides.
    const base = Date.parse("2026-11-30T14:02:00.000Z");
    const rows = Array.from({ length: 60 }, (_, i) => ({
      id: `00000000-0000-4000-8000-${String((i * 37) % 101).padStart(12, "0")}`,
      title: `conversation ${i}`,
      createdAt: new Date(base - i * 1000),
      updatedAt: new Date(base + (i % 12) * 250),
      messageCount: i,
    }));
    await prisma.conversation.createMany({ data: rows });
    ids = rows.map((r) => r.id);
  });

  afterAll(async () => {
    model.close();
    await prisma.$disconnect();
    db.close();
  });

  const expected = (q: ConversationPageQuery) =>
    prisma.conversation.findMany({ orderBy: ORDER, skip: q.skip, take: q.take, ...(q.cursor ? { cursor: q.cursor } : {}) });

  it("returns Prisma's rows for every first/after and last/before shape", async () => {
    const queries: ConversationPageQuery[] = [];
    for (const take of [1, 2, 5, 21, 61, -1, -2, -5, -21, -61]) {
      for (const skip of [0, 1, 3]) {
        queries.push({ skip, take });
        for (const id of [ids[0]!, ids[7]!, ids[30]!, ids[59]!]) queries.push({ cursor: { id }, skip, take });
      }
    }
    expect(queries.length).toBe(150);
    for (const q of queries) {
      const ours = await model.page(q);
      expect(ours, JSON.stringify(q)).toEqual(await expected(q));
    }
  });

  it("gives an empty page for a cursor that names no conversation, as Prisma does", async () => {
    const q = { cursor: { id: "00000000-0000-4000-8000-999999999999" }, skip: 1, take: 5 };
    expect(await expected(q)).toEqual([]);
    expect(await model.page(q)).toEqual([]);
    expect(await model.page({ ...q, take: -5 })).toEqual([]);
  });

  it("counts every conversation", async () => {
    expect(await model.count()).toBe(await prisma.conversation.count());
    expect(await model.count()).toBe(60);
  });

  it("sees a commit made on another connection at once", async () => {
    const id = "00000000-0000-4000-8000-aaaaaaaaaaaa";
    await prisma.conversation.create({ data: { id, title: "newest", updatedAt: new Date("2027-01-01T00:00:00.000Z") } });
    expect((await model.page({ skip: 0, take: 1 }))[0]).toMatchObject({ id, title: "newest", updatedAt: new Date("2027-01-01T00:00:00.000Z") });
    expect(await model.count()).toBe(61);
    await prisma.conversation.delete({ where: { id } });
  });

  it("seeks and reads in index order: no scan up to the cursor, no sort", () => {
    const sql = (model as SqliteConversationListReadModel).statementSql;
    for (const [name, statement] of Object.entries(sql)) {
      const params = name.endsWith("From") ? [ids[30], 5, 0] : [5, 0];
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${statement}`).all(...params) as { detail: string }[]).map((p) => p.detail);
      expect(plan.join("\n"), name).not.toMatch(/TEMP B-TREE|SCAN c\b(?! USING (COVERING )?INDEX conversations_updated_at_id_idx)/);
      expect(plan.join("\n"), name).toMatch(/conversations_updated_at_id_idx/);
      if (name.endsWith("From")) expect(plan.join("\n"), name).toMatch(/SEARCH c USING INDEX conversations_updated_at_id_idx \((updated_at|\(updated_at,id\))[<>]/);
    }
  });

  it("reads dates in both of SQLite's stored forms", () => {
    expect(parseSqliteDate("2026-11-30T14:02:00.123+00:00").toISOString()).toBe("2026-11-30T14:02:00.123Z");
    expect(parseSqliteDate("2026-11-30 14:02:00").toISOString()).toBe("2026-11-30T14:02:00.000Z");
    expect(parseSqliteDate(Date.parse("2026-11-30T14:02:00.000Z")).toISOString()).toBe("2026-11-30T14:02:00.000Z");
    // Written as Prisma writes it, so text order stays chronological across writers.
    expect(formatSqliteDate(new Date("2026-11-30T14:02:00.120Z"))).toBe("2026-11-30T14:02:00.120+00:00");
  });
});
