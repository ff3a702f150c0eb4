// What a run streams that its checkpoints do not keep, written to the run event
// store as it goes, so a reader after the event log is gone (EVENT_GRACE_MS
// after the run) sees it as a subscriber did: each custom event, and each
// message's first token (the node it came from). Never a write per token: the
// events wait in memory and go in one batch at each checkpoint and before the
// outcome is recorded, so what a finished run stored is there once its terminal
// status can be read.
import type { RunEvent } from "../domain/events.ts";
import type { Logger } from "../logger.ts";
import type { RunEventStore, StoredRunEvent } from "../storage/run-events/types.ts";

export class StoredEvents {
  readonly #store: RunEventStore;
  readonly #runId: string;
  readonly #logger: Logger;
  #pending: StoredRunEvent[] = [];
  readonly #messages = new Set<string>();
  #writing: Promise<void> = Promise.resolve();

  constructor(store: RunEventStore, runId: string, logger: Logger) {
    this.#store = store;
    this.#runId = runId;
    this.#logger = logger;
  }

  /** Told every event the run published; keeps the ones to store (a set lookup per token). */
  observe(event: RunEvent): void {
    if (event.type === "token") {
      if (event.messageId === null || this.#messages.has(event.messageId)) return;
      this.#messages.add(event.messageId);
      this.#pending.push({ kind: "message", seq: event.seq, at: event.at, messageId: event.messageId, node: event.node });
    } else if (event.type === "custom") {
      this.#pending.push({ kind: "custom", seq: event.seq, at: event.at, name: event.name, data: event.data });
    }
  }

  /**
   * Writes what waits, after any write still in flight (batches commit in
   * order). A batch that fails is kept for the next flush; a failure is
   * logged, never thrown: the run goes on without it.
   */
  flush(): Promise<void> {
    this.#writing = this.#writing.then(async () => {
      if (this.#pending.length === 0) return;
      const batch = this.#pending;
      this.#pending = [];
      try {
        await this.#store.record(this.#runId, batch);
      } catch (error) {
        this.#pending = [...batch, ...this.#pending];
        this.#logger.warn("a run's events were not stored", { runId: this.#runId, events: batch.length, error });
      }
    });
    return this.#writing;
  }
}
