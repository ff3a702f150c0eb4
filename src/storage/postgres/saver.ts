// LangGraph's PostgresSaver on runledger's pool, with two changes:
// - channel versions are unique strings, not plain integers. PostgresSaver
//   stores each channel value once per (thread, channel, version) and inserts
//   with ON CONFLICT DO NOTHING, so a fork (a new branch from an old checkpoint)
//   reuses a version number already written on the other branch and silently
//   keeps the old value. A version of "<32-digit counter>.<random>" sorts like the
//   counter and never repeats.
// - deleting a thread can join a run store transaction (deleteThreadIn).
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import type { PostgresClient, PostgresPool } from "./database.ts";

export class RunledgerPostgresSaver extends PostgresSaver {
  constructor(pool: PostgresPool) {
    super(pool);
  }

  override getNextVersion(current: number | undefined): number {
    const previous = current === undefined ? 0 : typeof current === "number" ? current : Number.parseInt(String(current).split(".")[0]!, 10);
    const next = `${String(previous + 1).padStart(32, "0")}.${Math.random().toString().slice(2).padEnd(16, "0")}`;
    // LangGraph treats versions opaquely; the base class is typed for numbers only.
    return next as unknown as number;
  }

  /**
   * Drops the thread's checkpoints after `keepThrough` (every one with null) and
   * their writes, in the caller's transaction. Channel blobs stay: versions are
   * shared between checkpoints, and an unused one is only space.
   */
  async dropCheckpointsAfterIn(client: PostgresClient, threadId: string, keepThrough: string | null): Promise<void> {
    if (keepThrough === null) return this.deleteThreadIn(client, threadId);
    // Checkpoint ids are time-ordered text: compared byte by byte, whatever the database's collation.
    await client.query(`DELETE FROM checkpoint_writes WHERE thread_id = $1 AND checkpoint_id COLLATE "C" > $2`, [threadId, keepThrough]);
    await client.query(`DELETE FROM checkpoints WHERE thread_id = $1 AND checkpoint_id COLLATE "C" > $2`, [threadId, keepThrough]);
  }

  /** Deletes the thread's checkpoints, blobs and writes in the caller's transaction. */
  async deleteThreadIn(client: PostgresClient, threadId: string): Promise<void> {
    await client.query(`DELETE FROM checkpoint_blobs WHERE thread_id = $1`, [threadId]);
    await client.query(`DELETE FROM checkpoints WHERE thread_id = $1`, [threadId]);
    await client.query(`DELETE FROM checkpoint_writes WHERE thread_id = $1`, [threadId]);
  }
}
