// What a storage backend provides: one object per seam, LangGraph's
// checkpointer for the same database, and its lifecycle.
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import type { RunStore } from "./run-store/types.ts";
import type { ConversationList } from "./conversation-list/types.ts";
import type { CheckpointReads } from "./checkpoint-reads/types.ts";
import type { ApiKeyStore } from "./api-keys/types.ts";
import type { ToolJournal } from "./tool-journal/types.ts";
import type { RunEventStore } from "./run-events/types.ts";
import type { ScheduleStore } from "./schedules/types.ts";
import type { WebhookStore } from "./webhooks/types.ts";
import type { RetentionStore } from "./retention/types.ts";

export interface Storage {
  runs: RunStore;
  conversationList: ConversationList;
  checkpointReads: CheckpointReads;
  /** The API keys callers authenticate with (their hashes only). */
  apiKeys: ApiKeyStore;
  /** Every attempt at a tool call, before and after it runs. */
  toolJournal: ToolJournal;
  /** What runs streamed that their checkpoints do not keep: custom events, each message's node. */
  runEvents: RunEventStore;
  /** Cron schedules that start runs, and their firings (docs/schedules.md). */
  schedules: ScheduleStore;
  /** The outbox of webhook deliveries (docs/webhooks.md): the deliverer's side. */
  webhooks: WebhookStore;
  /** What the retention sweeper finds and prunes, and its lease (docs/retention.md). */
  retention: RetentionStore;
  /** LangGraph's checkpointer on the same database (the thread's history). */
  saver: BaseCheckpointSaver;
  /** Callers waiting for the database now: writes queued at SQLite's write gate, or queries waiting for a PostgreSQL pool connection (metrics). */
  waiting(): number;
  /** Throws when the database does not answer (readiness). */
  ping(): Promise<void>;
  /** The database server's clock, for checking this host's against it; null when the database is a local file. */
  databaseTime(): Promise<Date | null>;
  /** Closes every connection; call after the last write. */
  close(): Promise<void>;
}
