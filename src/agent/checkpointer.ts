// The checkpointer seam: LangGraph's BaseCheckpointSaver. SqliteSaver on the
// shared database file today; a PostgresSaver would slot in here.
import type { RunnableConfig } from "@langchain/core/runnables";
import { BaseCheckpointSaver, type Checkpoint, type CheckpointMetadata, type CheckpointTuple, type PendingWrite, type CheckpointListOptions } from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { openSqlite } from "../db/sqlite.ts";
import { WriteGate } from "../db/write-gate.ts";

/** `gate` is shared with the run store, so the two never write at once in one process (see WriteGate). */
export function createSqliteCheckpointer(databasePath: string, gate: WriteGate = new WriteGate()): { saver: SqliteSaver; close: () => void } {
  const db = openSqlite(databasePath);
  const saver = new GatedSqliteSaver(db, gate);
  return { saver, close: () => db.close() };
}

/** SqliteSaver whose writes pass through the process's write gate; reads (WAL) need no lock. */
class GatedSqliteSaver extends SqliteSaver {
  constructor(
    db: ConstructorParameters<typeof SqliteSaver>[0],
    private readonly gate: WriteGate,
  ) {
    super(db);
  }
  override put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata): Promise<RunnableConfig> {
    return this.gate.run(() => super.put(config, checkpoint, metadata));
  }
  override putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    return this.gate.run(() => super.putWrites(config, writes, taskId));
  }
  override deleteThread(threadId: string): Promise<void> {
    return this.gate.run(() => super.deleteThread(threadId));
  }
}

/**
 * Delegates to a saver and reports each checkpoint once it is stored, so a run
 * can publish "the checkpoint just saved" as it happens.
 */
export class ObservedCheckpointer extends BaseCheckpointSaver {
  constructor(
    private readonly inner: BaseCheckpointSaver,
    private readonly onPut: (checkpointId: string, threadId: string) => void,
  ) {
    super(inner.serde);
  }
  getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return this.inner.getTuple(config);
  }
  list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    return this.inner.list(config, options);
  }
  async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: Record<string, string | number>): Promise<RunnableConfig> {
    const stored = await this.inner.put(config, checkpoint, metadata, newVersions);
    this.onPut(checkpoint.id, String(config.configurable?.thread_id));
    return stored;
  }
  putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    return this.inner.putWrites(config, writes, taskId);
  }
  deleteThread(threadId: string): Promise<void> {
    return this.inner.deleteThread(threadId);
  }
}
