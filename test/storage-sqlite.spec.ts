// What only the SQLite backend promises, beside the conformance suites: the
// text format of stored dates (the format databases made by earlier versions
// hold), query plans that seek by index instead of scanning, LangGraph's
// saver compiling each statement once, and the write-ahead log folded back
// by a worker thread rather than by the writer on the event loop.
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDatabaseUrl } from "../testkit/app.ts";
import { openSqliteStorage, type SqliteStorage } from "../src/storage/open-sqlite.ts";
import { openSqlite, type SqliteDatabase } from "../src/storage/sqlite/database.ts";
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { withStatementCache } from "../src/storage/sqlite/statement-cache.ts";
import { GatedSqliteSaver } from "../src/storage/sqlite/saver.ts";
import { WriteGate } from "../src/storage/sqlite/write-gate.ts";
import { startWalCheckpoints } from "../src/storage/sqlite/wal-checkpoints.ts";
import { until } from "../testkit/streaming.ts";
import { migrate } from "../src/storage/sqlite/migrate.ts";
import { formatSqliteDate, parseSqliteDate } from "../src/storage/sqlite/rows.ts";
import { CHECKPOINTS_IN_WINDOWS_SQL } from "../src/storage/checkpoint-reads/sqlite.ts";
import { conversation as newConversation, OUTCOME_EXTRAS } from "./conformance/records.ts";

let storage: SqliteStorage;
let db: SqliteDatabase;
const ids: string[] = [];

beforeAll(async () => {
  const { file } = tempDatabaseUrl("runledger-sqlite-");
  storage = await openSqliteStorage(file);
  db = openSqlite(file, { readonly: true });
  for (let i = 0; i < 20; i++) {
    const { conversation } = await storage.runs.startRun(
      {
        id: randomUUID(),
        conversationId: randomUUID(),
        kind: "start",
        input: "x",
        startedAt: new Date(Date.UTC(2026, 10, 30, 14, 2, 0, i * 7)),
        startMark: `s${i}`,
        ownerId: "o",
        startCheckpointId: null,
      },
      newConversation(`c${i}`),
    );
    ids.push(conversation.id);
  }
});
afterAll(async () => {
  db?.close();
  await storage?.close();
});

describe("stored dates", () => {
  it("are written as earlier versions wrote them (ISO text with +00:00), so text order is time order", async () => {
    const at = new Date("2026-11-30T14:02:00.123Z");
    const { run } = await storage.runs.startRun(
      { id: randomUUID(), conversationId: randomUUID(), kind: "start", input: "hi", startedAt: at, startMark: "m", ownerId: "o", startCheckpointId: null },
      newConversation("A"),
    );
    await storage.runs.finishRun(run.id, {
      status: "failed",
      errorCode: "MODEL_ERROR",
      errorMessage: "x",
      partialOutput: "p",
      finishedAt: new Date(at.getTime() + 5),
      endMark: "e",
      lastEventSeq: 4,
      messageCount: 3,
      ...OUTCOME_EXTRAS,
    });
    expect(db.prepare("SELECT started_at, finished_at FROM runs WHERE id = ?").get(run.id)).toEqual({
      started_at: "2026-11-30T14:02:00.123+00:00",
      finished_at: "2026-11-30T14:02:00.128+00:00",
    });
    expect(db.prepare("SELECT created_at, updated_at FROM conversations WHERE id = ?").get(run.conversationId)).toEqual({
      created_at: "2026-11-30T14:02:00.123+00:00",
      updated_at: "2026-11-30T14:02:00.128+00:00",
    });
  });

  it("are read in both of SQLite's stored forms", () => {
    expect(parseSqliteDate("2026-11-30T14:02:00.123+00:00").toISOString()).toBe("2026-11-30T14:02:00.123Z");
    expect(parseSqliteDate("2026-11-30 14:02:00").toISOString()).toBe("2026-11-30T14:02:00.000Z");
    expect(parseSqliteDate(Date.parse("2026-11-30T14:02:00.000Z")).toISOString()).toBe("2026-11-30T14:02:00.000Z");
    expect(formatSqliteDate(new Date("2026-11-30T14:02:00.120Z"))).toBe("2026-11-30T14:02:00.120+00:00");
  });
});

describe("query plans", () => {
  it("the conversation list seeks and reads in index order: no scan up to the cursor, no sort", () => {
    for (const [name, statement] of Object.entries(storage.conversationList.statementSql)) {
      const params = name.endsWith("From") ? [ids[10], 5, 0] : [5, 0];
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${statement}`).all(...params) as { detail: string }[]).map((p) => p.detail).join("\n");
      expect(plan, name).not.toMatch(/TEMP B-TREE|SCAN c\b(?! USING (COVERING )?INDEX conversations_updated_at_id_idx)/);
      expect(plan, name).toMatch(/conversations_updated_at_id_idx/);
      if (name.endsWith("From")) expect(plan, name).toMatch(/SEARCH c USING INDEX conversations_updated_at_id_idx \((updated_at|\(updated_at,id\))[<>]/);
    }
  });

  it("a run window is a primary-key range bounded at both ends, open windows included", () => {
    const plan = (
      db.prepare(`EXPLAIN QUERY PLAN ${CHECKPOINTS_IN_WINDOWS_SQL}`).all(JSON.stringify([{ key: "k", threadId: ids[0], startMark: "a", endMark: null }])) as {
        detail: string;
      }[]
    )
      .map((p) => p.detail)
      .join("\n");
    expect(plan).toMatch(
      /SEARCH checkpoints USING (COVERING )?INDEX sqlite_autoindex_checkpoints_1 \(thread_id=\? AND checkpoint_ns=\? AND checkpoint_id>\? AND checkpoint_id<\?\)/,
    );
  });
});

describe("LangGraph's saver on the writer", () => {
  it("compiles each statement once: writing and reading a checkpoint again prepares nothing", async () => {
    const { file } = tempDatabaseUrl("runledger-statements-");
    const raw = openSqlite(file);
    try {
      migrate(raw);
      const compiled: string[] = [];
      const prepare = raw.prepare.bind(raw);
      raw.prepare = ((sql: string) => {
        compiled.push(sql);
        return prepare(sql);
      }) as typeof raw.prepare;
      const saver = new GatedSqliteSaver(raw, new WriteGate());
      saver.createTables();
      const config = { configurable: { thread_id: "t", checkpoint_ns: "" } };
      const listed: unknown[] = [];
      const roundTrip = async () => {
        const stored = await saver.put(config, { ...emptyCheckpoint(), id: uuid6(-1) }, { source: "loop", step: 0, parents: {} });
        await saver.putWrites(stored, [["messages", "x"]], "task");
        expect(await saver.getTuple(stored)).toBeDefined();
        for await (const tuple of saver.list(config, { limit: 2 })) listed.push(tuple);
      };
      await roundTrip();
      const first = compiled.length;
      await roundTrip();
      await roundTrip();
      expect(listed).toHaveLength(5);
      expect(first).toBeGreaterThanOrEqual(4);
      expect(compiled).toHaveLength(first);
    } finally {
      raw.close();
    }
  });

  it("keeps at most its capacity of statements, evicting the least recently used", () => {
    const { file } = tempDatabaseUrl("runledger-statements-");
    const raw = openSqlite(file);
    try {
      const cached = withStatementCache(raw, 2);
      const a = cached.prepare("SELECT 1");
      const b = cached.prepare("SELECT 2");
      expect(cached.prepare("SELECT 1")).toBe(a);
      cached.prepare("SELECT 3"); // evicts SELECT 2, the least recently used
      expect(cached.prepare("SELECT 1")).toBe(a);
      expect(cached.prepare("SELECT 2")).not.toBe(b);
      expect(cached.transaction(() => cached.prepare("SELECT 1").get())()).toEqual({ 1: 1 });
    } finally {
      raw.close();
    }
  });
});

describe("another process's write lock", () => {
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it("is waited for beside the event loop: timers run meanwhile, and the write lands once the lock is free", async () => {
    const { file } = tempDatabaseUrl("runledger-busy-");
    const own = await openSqliteStorage(file);
    const other = openSqlite(file);
    try {
      other.exec("BEGIN IMMEDIATE"); // as another instance on the same file does while it writes
      let ticks = 0;
      const ticker = setInterval(() => (ticks += 1), 5);
      const created = own.apiKeys.create({ id: "key-busy", hash: "h-busy", userId: "u", role: "user", label: null, createdAt: new Date() });
      await sleep(200);
      clearInterval(ticker);
      // SQLite's own busy timeout would hold this thread until the lock is free, which it never would be here.
      expect(ticks).toBeGreaterThan(10);
      expect(other.prepare("SELECT count(*) AS n FROM api_keys WHERE id = 'key-busy'").get()).toEqual({ n: 0 });
      other.exec("COMMIT");
      expect((await created).id).toBe("key-busy");
      expect(other.prepare("SELECT count(*) AS n FROM api_keys WHERE id = 'key-busy'").get()).toEqual({ n: 1 });
    } finally {
      other.close();
      await own.close();
    }
  });

  it("held past the busy timeout fails the write with SQLITE_BUSY, having written nothing; the next write goes on", async () => {
    const { file } = tempDatabaseUrl("runledger-busy-");
    const writer = openSqlite(file);
    writer.exec("CREATE TABLE t (x INTEGER)");
    writer.pragma("busy_timeout = 0");
    const other = openSqlite(file);
    const gate = new WriteGate(undefined, 150);
    const insert = () => writer.transaction(() => writer.prepare("INSERT INTO t VALUES (1)").run()).immediate();
    try {
      other.exec("BEGIN IMMEDIATE");
      const started = performance.now();
      await expect(gate.run(insert)).rejects.toMatchObject({ code: "SQLITE_BUSY" });
      expect(performance.now() - started).toBeGreaterThanOrEqual(140);
      other.exec("COMMIT");
      await gate.run(insert);
      expect(writer.prepare("SELECT count(*) AS n FROM t").get()).toEqual({ n: 1 });
    } finally {
      other.close();
      writer.close();
    }
  });
});

describe("the write-ahead log, folded back off the event loop", () => {
  it("the writer's automatic checkpoints are off, and a worker thread folds the log into the file; a worker that fails gives them back", async () => {
    const { file, remove } = tempDatabaseUrl("runledger-wal-");
    const writer = openSqlite(file);
    try {
      writer.exec("CREATE TABLE filler (body BLOB)");
      const checkpoints = startWalCheckpoints(writer, file, 50);
      expect(writer.pragma("wal_autocheckpoint", { simple: true })).toBe(0);
      // Well past the 1,000 pages at which the writer would have run the checkpoint itself.
      const insert = writer.prepare("INSERT INTO filler (body) VALUES (?)");
      writer.transaction(() => {
        for (let i = 0; i < 1_500; i++) insert.run(Buffer.alloc(4_000, i % 251));
      })();
      expect(fs.statSync(`${file}-wal`).size).toBeGreaterThan(5_000_000);
      // Not folded until a write is told.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(fs.statSync(file).size).toBeLessThan(1_000_000);
      checkpoints.wrote();
      await until(() => fs.statSync(file).size > 5_000_000, "the log folded into the file by the worker");
      await checkpoints.stop();
      expect(writer.pragma("wal_autocheckpoint", { simple: true })).toBe(0);

      const failing = startWalCheckpoints(writer, `${file}.missing`, 50);
      await until(() => writer.pragma("wal_autocheckpoint", { simple: true }) === 1000, "automatic checkpoints given back");
      await failing.stop();
    } finally {
      writer.close();
      remove();
    }
  });
});
