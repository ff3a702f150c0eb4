// The embedded backend: one SQLite file holding runledger's tables and
// SqliteSaver's. It owns the file: one writer connection (the run store's writes
// and LangGraph's, in the write gate's order), one read-only reader connection
// (every read model), and the set-up: migrations, then SqliteSaver's tables,
// before anything reads or writes.
import type { Storage } from "./types.ts";
import { SqliteRunStore } from "./run-store/sqlite.ts";
import { SqliteConversationList } from "./conversation-list/sqlite.ts";
import { SqliteCheckpointReads } from "./checkpoint-reads/sqlite.ts";
import { SqliteApiKeyStore } from "./api-keys/sqlite.ts";
import { SqliteToolJournal } from "./tool-journal/sqlite.ts";
import { SqliteRunEventStore } from "./run-events/sqlite.ts";
import { SqliteScheduleStore } from "./schedules/sqlite.ts";
import { SqliteWebhookStore } from "./webhooks/sqlite.ts";
import { SqliteRetentionStore } from "./retention/sqlite.ts";
import { openSqlite } from "./sqlite/database.ts";
import { migrate } from "./sqlite/migrate.ts";
import { GatedSqliteSaver } from "./sqlite/saver.ts";
import { WriteGate } from "./sqlite/write-gate.ts";
import { startWalCheckpoints, type WalCheckpoints } from "./sqlite/wal-checkpoints.ts";

export interface SqliteStorage extends Storage {
  saver: GatedSqliteSaver;
  runs: SqliteRunStore;
  conversationList: SqliteConversationList;
  /** Migrations applied by this opening. */
  migrated: string[];
}

/** `onWriteWait`: told how long each write waited at the write gate, in ms. */
export async function openSqliteStorage(file: string, options: { onWriteWait?: (ms: number) => void } = {}): Promise<SqliteStorage> {
  const writer = openSqlite(file);
  let checkpoints: WalCheckpoints | null = null;
  try {
    const { applied } = migrate(writer);
    // Each write, as its turn comes, asks for the log to be folded back soon after.
    const gate = new WriteGate((ms) => {
      options.onWriteWait?.(ms);
      checkpoints?.wrote();
    });
    const saver = new GatedSqliteSaver(writer, gate);
    saver.createTables();
    // From here every write goes through the gate, which waits for another process's lock without holding the thread.
    writer.pragma("busy_timeout = 0");
    // The log is folded back into the file off the event loop.
    checkpoints = startWalCheckpoints(writer, file);
    const reader = openSqlite(file, { readonly: true });
    const runs = new SqliteRunStore({
      writer,
      reader,
      gate,
      deleteThread: (threadId) => saver.deleteThreadRows(threadId),
      dropCheckpointsAfter: (threadId, keepThrough) => saver.dropCheckpointsAfterRows(threadId, keepThrough),
    });
    return {
      runs,
      conversationList: new SqliteConversationList(reader),
      checkpointReads: new SqliteCheckpointReads(reader),
      apiKeys: new SqliteApiKeyStore({ writer, reader, gate }),
      toolJournal: new SqliteToolJournal({ writer, reader, gate }),
      runEvents: new SqliteRunEventStore({ writer, reader, gate }),
      schedules: new SqliteScheduleStore({ writer, reader, gate }),
      webhooks: new SqliteWebhookStore({ writer, reader, gate }),
      retention: new SqliteRetentionStore({ writer, reader, gate }),
      saver,
      migrated: applied,
      waiting: () => gate.queued,
      async ping() {
        reader.prepare("SELECT 1").get();
      },
      async databaseTime() {
        return null;
      },
      async close() {
        // Writes queued before close() still run: wait for the gate to drain.
        await gate.run(() => undefined);
        await checkpoints?.stop();
        reader.close();
        writer.close();
      },
    };
  } catch (error) {
    await checkpoints?.stop();
    writer.close();
    throw error;
  }
}
