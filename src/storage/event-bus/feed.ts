// What the buses that follow another process's runs (Redis, the cluster's
// relay) share: one feed per run per process, its subscribers each with a
// cursor, and the subscribeRun calls joining it while their replay read is
// under way. A joiner keeps what the feed delivers meanwhile; its replay and
// that buffer together leave no gap, and the cursor drops what both hold.
import { isTerminalEvent, type RunEvent } from "../../domain/events.ts";
import type { Subscriber } from "./subscriber.ts";

/** A follower's position in a run: the seq it expects next. */
export interface Cursor {
  next: number;
}

/** A subscribeRun call waiting for its replay read; it keeps what the feed delivers meanwhile. */
export interface Joiner {
  buffer: RunEvent[];
  overflowed: boolean;
}

/**
 * Adds `event` for a follower at `cursor`: nothing when it has it already, and
 * a replayGap first when seqs it expects are no longer retained (trimmed before
 * it could read them).
 */
export function advance(cursor: Cursor, event: RunEvent, into: { push(event: RunEvent): unknown }, now: () => Date): void {
  if (event.seq < cursor.next) return;
  if (event.seq > cursor.next) {
    const toSeq = event.seq - 1;
    into.push({ type: "replayGap", fromSeq: cursor.next, toSeq, seq: toSeq, runId: event.runId, conversationId: event.conversationId, at: now() });
  }
  into.push(event);
  cursor.next = event.seq + 1;
}

/**
 * What a joiner starts with: the replay read after `after`, then what the feed
 * delivered meanwhile, each seq once, up to the terminal event. `ended` also
 * when the replay found the run finished.
 */
export function joinReplay(replay: readonly RunEvent[], joiner: Joiner, after: number, finished: boolean, now: () => Date) {
  const initial: RunEvent[] = [];
  const cursor: Cursor = { next: after + 1 };
  let ended = false;
  for (const event of [...replay, ...joiner.buffer]) {
    if (ended) break;
    advance(cursor, event, initial, now);
    if (isTerminalEvent(event)) ended = true;
  }
  return { initial, next: cursor.next, ended: ended || finished };
}

/** Hands one event a feed received to its joiners (each buffer bounded by `limit`) and its followers. */
export function deliver(event: RunEvent, joiners: Iterable<Joiner>, live: Map<Subscriber<RunEvent>, Cursor>, limit: number, now: () => Date): void {
  for (const joiner of joiners) {
    if (joiner.buffer.length >= limit) joiner.overflowed = true;
    else joiner.buffer.push(event);
  }
  for (const [sub, cursor] of live) advance(cursor, event, sub, now);
}
