import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { describeRunStoreConformance } from "./support/run-store-conformance.ts";
import { tempDatabaseUrl } from "./support/app.ts";
import { openSqlite } from "../src/db/sqlite.ts";
import { migrate } from "../src/db/migrate.ts";
import { createPrismaClient } from "../src/db/prisma.ts";
import { createSqliteCheckpointer } from "../src/agent/checkpointer.ts";
import { PrismaRunStore } from "../src/runs/store.ts";
import { SqliteRunStore } from "../src/runs/store-sqlite.ts";

/** A migrated file with LangGraph's tables (deleting a conversation also deletes its thread). */
async function setUpFile() {
  const { file } = tempDatabaseUrl("runledger-store-");
  const db = openSqlite(file);
  migrate(db);
  const checkpointer = createSqliteCheckpointer(file);
  await checkpointer.saver.getTuple({ configurable: { thread_id: "setup" } });
  const prisma = createPrismaClient(file);
  return {
    db,
    prisma,
    close: async () => {
      await prisma.$disconnect();
      checkpointer.close();
      db.close();
    },
  };
}

describeRunStoreConformance("PrismaRunStore on SQLite", async () => {
  const file = await setUpFile();
  return { store: new PrismaRunStore(file.prisma), close: file.close };
});

describeRunStoreConformance("SqliteRunStore", async () => {
  const file = await setUpFile();
  return { store: new SqliteRunStore(file.db), close: file.close };
});

describe("SqliteRunStore and Prisma share the rows", () => {
  it("Prisma reads exactly what SqliteRunStore wrote, and the other way round", async () => {
    const file = await setUpFile();
    try {
      const sqlite = new SqliteRunStore(file.db);
      const viaPrisma = new PrismaRunStore(file.prisma);
      const at = new Date("2026-11-30T14:02:00.123Z");
      const a = await sqlite.startRun({ id: randomUUID(), conversationId: randomUUID(), kind: "start", input: "hi", startedAt: at, startMark: "m1", ownerId: "o" }, { title: "A" });
      const b = await viaPrisma.startRun({ id: randomUUID(), conversationId: randomUUID(), kind: "start", input: null, startedAt: at, startMark: "m2", ownerId: null as never }, { title: "B" });
      await sqlite.finishRun(a.run.id, { status: "failed", errorCode: "MODEL_ERROR", errorMessage: "x", partialOutput: "p", finishedAt: new Date(at.getTime() + 5), endMark: "e", lastEventSeq: 4, messageCount: 3 });
      await viaPrisma.finishRun(b.run.id, { status: "completed", errorCode: null, errorMessage: null, partialOutput: null, finishedAt: new Date(at.getTime() + 7), endMark: "f", lastEventSeq: 9, messageCount: null });
      for (const { run, conversation } of [a, b]) {
        expect(await sqlite.getRun(run.id)).toEqual(await file.prisma.run.findUnique({ where: { id: run.id } }));
        expect(await sqlite.getConversation(conversation.id)).toEqual(await file.prisma.conversation.findUnique({ where: { id: conversation.id } }));
        expect(await viaPrisma.getRun(run.id)).toEqual(await sqlite.getRun(run.id));
      }
      // One text format in the DATETIME columns, whichever store wrote the row: text order is time order.
      const stored = (id: string) => file.db.prepare("SELECT started_at, finished_at FROM runs WHERE id = ?").get(id);
      expect(stored(a.run.id)).toEqual({ started_at: "2026-11-30T14:02:00.123+00:00", finished_at: "2026-11-30T14:02:00.128+00:00" });
      expect(stored(b.run.id)).toEqual({ started_at: "2026-11-30T14:02:00.123+00:00", finished_at: "2026-11-30T14:02:00.130+00:00" });
    } finally {
      await file.close();
    }
  });
});
