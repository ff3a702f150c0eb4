// The checkpoint read model seam: what the API reads of LangGraph's checkpoints
// and task writes, whichever saver stores them. Each backend reads its saver's
// own tables (SqliteSaver keeps a checkpoint's channel values in its blob,
// PostgresSaver in checkpoint_blobs) and answers in these saver-neutral records.
// Every method takes many threads or checkpoints at once, so callers batch.
// Backends: sqlite.ts and postgres.ts; test/conformance/checkpoint-reads.ts
// holds every backend to what LangGraph's own state reader says (the truth).
import type { BaseMessage } from "@langchain/core/messages";
import type { CheckpointRecord, CheckpointWriteRecord } from "../../domain/records.ts";
import type { RunWindow } from "../../correlation/index.ts";

/** What a checkpoint's stored state says about its messages, read without reviving the whole state. */
export interface CheckpointContentRecord {
  threadId: string;
  checkpointId: string;
  messageCount: number;
  lastMessage: BaseMessage | null;
}

/** One thread's checkpoints and failed tasks, read as one consistent snapshot. */
export interface ThreadCheckpoints {
  /** Oldest first. */
  checkpoints: CheckpointRecord[];
  /** The `__error__` writes (failed tasks), in checkpoint order. */
  errorWrites: CheckpointWriteRecord[];
}

/** A page of a thread's checkpoints: the bounds are exclusive checkpoint ids. */
export interface CheckpointPageWindow {
  after: string | null;
  before: string | null;
  /** How many to take from the start (or, with fromEnd, from the end) of the bounded range. */
  limit: number;
  fromEnd: boolean;
}

/** A run's correlation window over its thread, named by `key` in the answer. */
export interface WindowQuery extends RunWindow {
  key: string;
  threadId: string;
}

export interface CheckpointReads {
  /** The checkpoints and failed tasks of each thread; threads without any get empty lists. */
  threads(threadIds: readonly string[]): Promise<Map<string, ThreadCheckpoints>>;
  /** The checkpoints inside each window (the correlation rule), oldest first, keyed by each window's `key`. */
  checkpointsInWindows(windows: readonly WindowQuery[]): Promise<Map<string, CheckpointRecord[]>>;
  /** One window of each thread's checkpoints, oldest first; every thread gets a list. */
  pages(threadIds: readonly string[], window: CheckpointPageWindow): Promise<Map<string, CheckpointRecord[]>>;
  /** The newest checkpoint of each thread (its head: what a run on it starts from); threads without any are left out. */
  heads(threadIds: readonly string[]): Promise<Map<string, string>>;
  /** The checkpoints with these ids, of threads whose conversation exists. */
  checkpointsByIds(ids: readonly string[]): Promise<CheckpointRecord[]>;
  /** Every write recorded against these checkpoints, by checkpoint, task and idx. */
  writes(checkpoints: readonly { threadId: string; checkpointId: string }[]): Promise<CheckpointWriteRecord[]>;
  /** The message count and last message of these checkpoints. */
  contents(checkpoints: readonly { threadId: string; checkpointId: string }[]): Promise<CheckpointContentRecord[]>;
}
