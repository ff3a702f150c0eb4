// LangGraph's SqliteSaver on the writer connection: its writes take their turn
// in the write gate with runledger's own, its statements are compiled once
// (statement-cache.ts), and deleting a thread can join a run store transaction
// (deleteThreadRows), since the saver is the one that knows its own tables.
import type { RunnableConfig } from "@langchain/core/runnables";
import type { Checkpoint, CheckpointMetadata, PendingWrite } from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import type { SqliteDatabase } from "./database.ts";
import { withStatementCache } from "./statement-cache.ts";
import type { WriteGate } from "./write-gate.ts";

export class GatedSqliteSaver extends SqliteSaver {
  readonly #db: SqliteDatabase;
  readonly #gate: WriteGate;

  constructor(db: SqliteDatabase, gate: WriteGate) {
    const cached = withStatementCache(db);
    super(cached);
    this.#db = cached;
    this.#gate = gate;
  }

  /** SqliteSaver's tables, created now rather than on its first read or write. */
  createTables(): void {
    this.setup();
  }

  override put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata): Promise<RunnableConfig> {
    return this.#gate.run(() => super.put(config, checkpoint, metadata));
  }

  override putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    return this.#gate.run(() => super.putWrites(config, writes, taskId));
  }

  override deleteThread(threadId: string): Promise<void> {
    return this.#gate.run(() => this.#db.transaction(() => this.deleteThreadRows(threadId))());
  }

  /** Drops the thread's checkpoints after `keepThrough` (every one with null) and their writes, in the caller's transaction. */
  dropCheckpointsAfterRows(threadId: string, keepThrough: string | null): void {
    if (keepThrough === null) return this.deleteThreadRows(threadId);
    this.setup();
    this.#db.prepare(`DELETE FROM writes WHERE thread_id = ? AND checkpoint_id > ?`).run(threadId, keepThrough);
    this.#db.prepare(`DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id > ?`).run(threadId, keepThrough);
  }

  /** Deletes the thread's checkpoints and writes in the caller's transaction (synchronous, on the writer connection). */
  deleteThreadRows(threadId: string): void {
    this.setup();
    this.#db.prepare(`DELETE FROM writes WHERE thread_id = ?`).run(threadId);
    this.#db.prepare(`DELETE FROM checkpoints WHERE thread_id = ?`).run(threadId);
  }
}
