// A run's view of the checkpointer: reports each checkpoint once it is stored.
import type { RunnableConfig } from "@langchain/core/runnables";
import { BaseCheckpointSaver, type Checkpoint, type CheckpointMetadata, type CheckpointTuple, type PendingWrite, type CheckpointListOptions } from "@langchain/langgraph-checkpoint";

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
