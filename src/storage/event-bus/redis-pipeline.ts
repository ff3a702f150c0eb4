// The Redis bus's command connection: commands queued within one tick go out
// as one pipeline, in call order, so a burst of publishes costs one round trip
// and no promise per event.
import type { Redis } from "ioredis";

export type Command = [name: string, ...args: (string | number)[]];
export type Reply = [error: Error | null, result: unknown];
export type OnReplies = (replies: Reply[], from: number, count: number) => void;

/** Commands queued for the next pipeline, and who wants their replies. */
interface Batch {
  commands: Command[];
  callbacks: { onReplies: OnReplies; from: number; count: number }[];
  done: Promise<void>;
  resolve: () => void;
}

export class CommandPipeline {
  #batch: Batch | null = null;

  constructor(readonly connection: Redis) {}

  /**
   * Queues commands. Everything queued in one tick goes out as one pipeline,
   * in call order. `onReplies` gets the batch's replies and where these
   * commands' replies start. The promise (one per batch) settles after every
   * callback of the batch ran; it never rejects.
   */
  write(commands: Command[], onReplies?: OnReplies): Promise<void> {
    if (!this.#batch) {
      let resolve!: () => void;
      const done = new Promise<void>((r) => (resolve = r));
      this.#batch = { commands: [], callbacks: [], done, resolve };
      queueMicrotask(() => this.flush());
    }
    const batch = this.#batch;
    if (onReplies) batch.callbacks.push({ onReplies, from: batch.commands.length, count: commands.length });
    for (const command of commands) batch.commands.push(command);
    return batch.done;
  }

  /** Sends the queued batch now (before a read that must see it). */
  flush() {
    const batch = this.#batch;
    if (!batch) return;
    this.#batch = null;
    const settle = (replies: Reply[]) => {
      for (const { onReplies, from, count } of batch.callbacks) onReplies(replies, from, count);
      batch.resolve();
    };
    this.connection
      .pipeline(batch.commands)
      .exec()
      .then(
        (replies) => settle((replies ?? []) as Reply[]),
        (error: Error) => settle(batch.commands.map(() => [error, null])),
      );
  }

  /** Writes and resolves with these commands' replies. */
  writeForReplies(commands: Command[]): Promise<Reply[]> {
    let mine: Reply[] = [];
    return this.write(commands, (replies, from, count) => (mine = replies.slice(from, from + count))).then(() => mine);
  }

  /** Writes and rejects with the first error Redis answered. */
  async writeOrThrow(commands: Command[]): Promise<void> {
    for (const [error] of await this.writeForReplies(commands)) if (error) throw error;
  }
}
