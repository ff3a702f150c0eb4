import { describeRunStoreConformance } from "./support/run-store-conformance.ts";
import { tempDatabaseUrl } from "./support/app.ts";
import { openSqlite } from "../src/db/sqlite.ts";
import { migrate } from "../src/db/migrate.ts";
import { createPrismaClient } from "../src/db/prisma.ts";
import { createSqliteCheckpointer } from "../src/agent/checkpointer.ts";
import { PrismaRunStore } from "../src/runs/store.ts";

describeRunStoreConformance("PrismaRunStore on SQLite", async () => {
  const { file } = tempDatabaseUrl("runledger-store-");
  const db = openSqlite(file);
  migrate(db);
  // Deleting a conversation also deletes its thread: LangGraph's tables must exist.
  const checkpointer = createSqliteCheckpointer(file);
  await checkpointer.saver.getTuple({ configurable: { thread_id: "setup" } });
  const prisma = createPrismaClient(file);
  return {
    store: new PrismaRunStore(prisma),
    close: async () => {
      await prisma.$disconnect();
      checkpointer.close();
      db.close();
    },
  };
});
