// The checkpoint read model seam: what the API reads of LangGraph's checkpoints
// and writes, and of the runs that produced them. SqliteCheckpointReadModel
// (checkpoints-sqlite.ts) reads the embedded file; a Postgres backend would read
// PostgresSaver's tables behind the same interface. Every method takes many
// conversations or checkpoints at once, so callers can batch.
import type { BaseMessage } from "@langchain/core/messages";
import type { RunRecord } from "../runs/store.ts";

export type CheckpointSourceValue = "input" | "loop" | "update" | "fork";

/** One LangGraph checkpoint of a conversation's thread (root namespace), as stored. */
export interface CheckpointRecord {
  /** LangGraph's checkpoint_id: a time-ordered UUID v6. */
  id: string;
  /** The thread id, which is the conversation id. */
  threadId: string;
  /** LangGraph's namespace; always "" (the root graph) for what this model returns. */
  checkpointNs: string;
  parentId: string | null;
  step: number;
  source: CheckpointSourceValue;
  /** The checkpoint's own `ts`. */
  createdAt: Date;
}

/** One row of LangGraph's `writes` table: a task's output (or its error) recorded against a checkpoint. */
export interface CheckpointWriteRecord {
  threadId: string;
  checkpointId: string;
  taskId: string;
  channel: string;
  idx: number;
  /** The stored value parsed as JSON (LangChain objects keep their serialized form); null when unreadable. */
  value: unknown;
}

/** What a checkpoint's blob says about its messages, read without deserializing the whole state. */
export interface CheckpointContentRecord {
  threadId: string;
  checkpointId: string;
  messageCount: number;
  lastMessage: BaseMessage | null;
}

/** What the run ↔ checkpoint correlation of one conversation needs, read as one consistent snapshot. */
export interface ThreadRecords {
  /** The conversation's runs, in start order. */
  runs: RunRecord[];
  /** Its checkpoints, oldest first. */
  checkpoints: CheckpointRecord[];
  /** Its `__error__` writes (failed tasks), in checkpoint order. */
  errorWrites: CheckpointWriteRecord[];
}

/** A page of a conversation's checkpoints: the bounds are exclusive checkpoint ids. */
export interface CheckpointPageWindow {
  after: string | null;
  before: string | null;
  /** How many to take from the start (or, with fromEnd, from the end) of the bounded range. */
  limit: number;
  fromEnd: boolean;
}

/** One run's correlation window over its thread's checkpoint ids. */
export interface RunWindow {
  key: string;
  threadId: string;
  from: string;
  to: string | null;
}

export interface CheckpointReadModel {
  /** The runs, checkpoints and failed tasks of each conversation; conversations without any get empty lists. */
  threads(conversationIds: string[]): Promise<Map<string, ThreadRecords>>;
  /**
   * The checkpoints inside each run window, oldest first: `from` and `to` are a
   * run's start and end marks, inclusive; `to` null is a window still open.
   * Results are keyed by each window's `key`.
   */
  checkpointsInWindows(windows: RunWindow[]): Promise<Map<string, CheckpointRecord[]>>;
  /** One window of each conversation's checkpoints, oldest first. */
  pages(conversationIds: string[], window: CheckpointPageWindow): Promise<Map<string, CheckpointRecord[]>>;
  /** The checkpoints with these ids, of conversations that exist. */
  checkpointsByIds(ids: string[]): Promise<CheckpointRecord[]>;
  /** Every write recorded against these checkpoints, by checkpoint, task and idx. */
  writes(checkpoints: { threadId: string; checkpointId: string }[]): Promise<CheckpointWriteRecord[]>;
  /** The message count and last message of these checkpoints. */
  contents(checkpoints: { threadId: string; checkpointId: string }[]): Promise<CheckpointContentRecord[]>;
  close(): void;
}

export const ERROR_CHANNEL = "__error__";
