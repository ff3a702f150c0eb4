// The checkpointer every compiled graph uses: the storage backend's saver, plus
// a report of each checkpoint once it is stored, to the run executing on that
// thread, so the run can publish "the checkpoint just saved" as it happens.
// Graphs are compiled once per agent, so the report goes by thread id (one
// active run per conversation).
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type PendingWrite,
} from "@langchain/langgraph-checkpoint";
import { SpanStatusCode } from "@opentelemetry/api";
import { tracer, tracingOn } from "../telemetry/tracing.ts";

export class CheckpointObserver extends BaseCheckpointSaver {
  readonly #listeners = new Map<string, (checkpointId: string) => void>();

  constructor(private readonly inner: BaseCheckpointSaver) {
    super(inner.serde);
  }

  /** Reports the thread's checkpoints to `listener` until the returned function is called. */
  watch(threadId: string, listener: (checkpointId: string) => void): () => void {
    this.#listeners.set(threadId, listener);
    return () => {
      if (this.#listeners.get(threadId) === listener) this.#listeners.delete(threadId);
    };
  }

  getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return this.inner.getTuple(config);
  }

  list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    return this.inner.list(config, options);
  }

  async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    const stored = tracingOn()
      ? await this.#tracedPut(config, checkpoint, metadata, newVersions)
      : await this.inner.put(config, checkpoint, metadata, newVersions);
    // A subgraph's checkpoints (a namespace of their own) are not the conversation's: only the graph's own are reported.
    if (!config.configurable?.checkpoint_ns) this.#listeners.get(String(config.configurable?.thread_id))?.(checkpoint.id);
    return stored;
  }

  /** The write as a span under the run's (the active context while a run's graph works). */
  #tracedPut(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    return tracer().startActiveSpan(
      "checkpoint.write",
      {
        attributes: {
          "checkpoint.id": checkpoint.id,
          "checkpoint.step": metadata.step ?? -1,
          "checkpoint.namespace": String(config.configurable?.checkpoint_ns ?? ""),
        },
      },
      async (span) => {
        try {
          return await this.inner.put(config, checkpoint, metadata, newVersions);
        } catch (error) {
          span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
          throw error;
        } finally {
          span.end();
        }
      },
    );
  }

  putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    return this.inner.putWrites(config, writes, taskId);
  }

  deleteThread(threadId: string): Promise<void> {
    return this.inner.deleteThread(threadId);
  }

  // The backend's versioning (PostgreSQL's saver makes unique ones) must survive the wrapper.
  override getNextVersion(current: number | undefined): number {
    return this.inner.getNextVersion(current);
  }
}
