// Where a run on an existing conversation starts, for a run being recorded and
// for a queued run being admitted alike.
import { mintMarkAfter } from "../correlation/index.ts";
import type { RunStore } from "../storage/run-store/types.ts";
import type { CheckpointReads } from "../storage/checkpoint-reads/types.ts";

/**
 * A mark after everything the conversation recorded (even when another
 * instance's clock ran ahead of ours), and the thread's head checkpoint.
 */
export async function startPoint(
  options: { store: RunStore; checkpointReads: CheckpointReads; maxClockSkewMs: number },
  conversationId: string,
): Promise<[string, string | null]> {
  const [floor, heads] = await Promise.all([options.store.lastMark(conversationId), options.checkpointReads.heads([conversationId])]);
  return [await mintMarkAfter(floor, options.maxClockSkewMs), heads.get(conversationId) ?? null];
}
