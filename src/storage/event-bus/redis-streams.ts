// The Redis bus's stream reading: a run log's replay read, and connections
// looping on a blocking XREAD over the run logs (streams) this instance
// follows, each from its own cursor.
import type { Redis } from "ioredis";
import { isTerminalEvent, type RunEvent } from "../../domain/events.ts";
import { decodeEvent } from "./codec.ts";
import type { Reply } from "./redis-pipeline.ts";

export type StreamEntry = [id: string, fields: string[]];

/** A stream a reader follows: its key, and the id of the last entry read (`0-<cursor>`). */
export interface FollowedStream {
  readonly key: string;
  cursor: number | null;
}

/** A reader's XREAD returns at least this often even when nothing happens (then it reissues). */
const BLOCK_MS = 10_000;

/**
 * One connection looping on XREAD BLOCK over the runs it follows. A run added
 * while it blocks must join the next XREAD at once: the reader also reads a wake
 * stream of its own, from the last id it saw, so an XADD there ends the block
 * even when it reaches Redis before the XREAD does.
 */
export class StreamReader<F extends FollowedStream> {
  readonly feeds = new Set<F>();
  #wakeId = "0-0";
  #blocking = false;
  #idle: (() => void) | null = null;
  #closed = false;

  constructor(
    readonly connection: Redis,
    readonly wakeKey: string,
    readonly onEntries: (feed: F, entries: StreamEntry[]) => void,
    readonly wake: (wakeKey: string) => Promise<Reply[]>,
    readonly onError: (error: Error) => void,
    readonly readCount: number,
  ) {
    connection.on("error", onError);
    void this.#loop();
  }

  add(feed: F) {
    this.feeds.add(feed);
    if (this.#idle) {
      this.#idle();
      this.#idle = null;
    } else if (this.#blocking) {
      void this.wake(this.wakeKey).then(([[error] = [null]]) => error && this.onError(error));
    }
  }

  remove(feed: F) {
    // A pending XREAD may still name it; its entries are then ignored.
    this.feeds.delete(feed);
  }

  close() {
    this.#closed = true;
    this.#idle?.();
    this.connection.disconnect();
  }

  async #loop() {
    let failures = 0;
    while (!this.#closed) {
      if (this.feeds.size === 0) {
        await new Promise<void>((resolve) => (this.#idle = resolve));
        continue;
      }
      const feeds = [...this.feeds];
      const byKey = new Map(feeds.map((f) => [f.key, f]));
      const keys = [this.wakeKey, ...feeds.map((f) => f.key)];
      const ids = [this.#wakeId, ...feeds.map((f) => `0-${f.cursor}`)];
      let reply: [key: string, entries: StreamEntry[]][] | null;
      this.#blocking = true;
      try {
        reply = (await this.connection.xread("COUNT", this.readCount, "BLOCK", BLOCK_MS, "STREAMS", ...keys, ...ids)) as typeof reply;
        failures = 0;
      } catch (error) {
        if (this.#closed) return;
        this.onError(error as Error);
        failures += 1;
        await new Promise((r) => setTimeout(r, Math.min(1000, 50 * 2 ** failures)));
        continue;
      } finally {
        this.#blocking = false;
      }
      if (this.#closed) return;
      for (const [key, entries] of reply ?? []) {
        if (key === this.wakeKey) {
          this.#wakeId = entries[entries.length - 1]![0];
          continue;
        }
        const feed = byKey.get(key);
        if (feed && this.feeds.has(feed)) this.onEntries(feed, entries);
      }
      // Subscribers waiting for an event were resumed by the push, as
      // microtasks queued before this one: they take it before the next XREAD
      // is built and written, whose cost would otherwise come first and add to
      // every event's latency. (Still in this tick, so the next read's round
      // trip overlaps whatever the subscribers do after that.)
      if (reply) await Promise.resolve();
    }
  }
}

export function decodeEntry([, fields]: StreamEntry): RunEvent {
  // Entries have one field, "e": the event as JSON.
  return decodeEvent(fields[1]!);
}

/** What a replay read found of one run's log. */
export interface RunLogSnapshot {
  exists: boolean;
  /** seq of the newest retained entry (0 when none). */
  lastSeq: number;
  /** The newest entry is the terminal event. */
  finished: boolean;
  /** Entries after the requested seq, oldest first. */
  entries: RunEvent[];
}

/** One MULTI: whether the log exists, its newest entry, and every entry after seq `after`. */
export async function readRunLog(command: Redis, key: string, after: number): Promise<RunLogSnapshot> {
  const replies = await command.multi().exists(key).xrevrange(key, "+", "-", "COUNT", 1).xrange(key, `(0-${after}`, "+").exec();
  if (!replies) throw new Error("the replay read was aborted");
  for (const [error] of replies) if (error) throw error;
  const [exists, last, entries] = replies.map(([, result]) => result) as [number, StreamEntry[], StreamEntry[]];
  const lastEntry = last[0];
  const lastEvent = lastEntry ? decodeEntry(lastEntry) : null;
  return {
    exists: exists === 1,
    lastSeq: lastEvent?.seq ?? 0,
    finished: lastEvent !== null && isTerminalEvent(lastEvent),
    entries: entries.map(decodeEntry),
  };
}
