// How many messages each conversation's thread holds now, read from the head
// checkpoint's stored state (no model, no full revival). Every path that records
// a run's outcome without having run it (a cancel from another instance, crash
// recovery, a lease that ran out) writes this count, so Conversation.messageCount
// always says what the thread says.
import type { CheckpointReads } from "../storage/checkpoint-reads/types.ts";

/** Every listed conversation gets a count: 0 when its thread has no checkpoint yet. */
export async function threadMessageCounts(reads: CheckpointReads, conversationIds: readonly string[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>(conversationIds.map((id) => [id, 0]));
  if (conversationIds.length === 0) return counts;
  const heads = await reads.heads(conversationIds);
  const contents = await reads.contents([...heads].map(([threadId, checkpointId]) => ({ threadId, checkpointId })));
  for (const content of contents) counts.set(content.threadId, content.messageCount);
  return counts;
}
