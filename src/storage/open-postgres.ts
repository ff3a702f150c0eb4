// The PostgreSQL backend: runledger's tables and PostgresSaver's in one
// database, shared by every instance. Opening it connects (or stops start-up
// with one line naming DATABASE_URL), applies pending migrations under an
// advisory lock and sets up LangGraph's tables, before anything reads or writes.
import type { Storage } from "./types.ts";
import { PostgresRunStore } from "./run-store/postgres.ts";
import { PostgresConversationList } from "./conversation-list/postgres.ts";
import { PostgresCheckpointReads } from "./checkpoint-reads/postgres.ts";
import { PostgresApiKeyStore } from "./api-keys/postgres.ts";
import { PostgresToolJournal } from "./tool-journal/postgres.ts";
import { PostgresRunEventStore } from "./run-events/postgres.ts";
import { PostgresScheduleStore } from "./schedules/postgres.ts";
import { PostgresWebhookStore } from "./webhooks/postgres.ts";
import { PostgresRetentionStore } from "./retention/postgres.ts";
import { connectPostgres } from "./postgres/database.ts";
import { migratePostgres } from "./postgres/migrate.ts";
import { RunledgerPostgresSaver } from "./postgres/saver.ts";

export interface PostgresStorage extends Storage {
  saver: RunledgerPostgresSaver;
  /** Migrations applied by this opening. */
  migrated: string[];
}

export async function openPostgresStorage(url: string): Promise<PostgresStorage> {
  const pool = await connectPostgres(url);
  try {
    const saver = new RunledgerPostgresSaver(pool);
    const { applied } = await migratePostgres(pool, saver);
    return {
      runs: new PostgresRunStore({
        pool,
        deleteThread: (client, threadId) => saver.deleteThreadIn(client, threadId),
        dropCheckpointsAfter: (client, threadId, keepThrough) => saver.dropCheckpointsAfterIn(client, threadId, keepThrough),
      }),
      conversationList: new PostgresConversationList(pool),
      checkpointReads: new PostgresCheckpointReads(pool),
      apiKeys: new PostgresApiKeyStore(pool),
      toolJournal: new PostgresToolJournal(pool),
      runEvents: new PostgresRunEventStore(pool),
      schedules: new PostgresScheduleStore(pool),
      webhooks: new PostgresWebhookStore(pool),
      retention: new PostgresRetentionStore(pool),
      saver,
      migrated: applied,
      waiting: () => pool.waitingCount,
      async ping() {
        await pool.query("SELECT 1");
      },
      async databaseTime() {
        return (await pool.query<{ now: Date }>("SELECT clock_timestamp() AS now")).rows[0]!.now;
      },
      async close() {
        await pool.end();
      },
    };
  } catch (error) {
    await pool.end().catch(() => {});
    throw error;
  }
}
