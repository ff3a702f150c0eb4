// The run event store seam: the `run_events` table. A run's events live in the
// event bus only until EVENT_GRACE_MS after it ends; what its checkpoints do not
// keep is stored here as it streams, so a reader after that (the console after a
// reload) sees it as a subscriber saw it live: each custom event, and the node
// each message's tokens came from. Tokens themselves are not stored: the
// thread's messages hold the text.

/** A custom event (LangGraph's custom stream writer), as published. */
export interface StoredCustomEvent {
  kind: "custom";
  /** Its seq in the run's events. */
  seq: number;
  at: Date;
  name: string;
  data: unknown;
}

/** The first token of a message: the graph node the message's tokens came from. */
export interface StoredMessageNode {
  kind: "message";
  /** The seq of the message's first token in the run's events. */
  seq: number;
  at: Date;
  messageId: string;
  node: string;
}

export type StoredRunEvent = StoredCustomEvent | StoredMessageNode;

export interface RunEventStore {
  /**
   * Stores events of a run, in one transaction. An event whose seq the run
   * already has is left as first stored (so a batch written again after a
   * failure that did commit changes nothing). The run must exist.
   */
  record(runId: string, events: readonly StoredRunEvent[]): Promise<void>;
  /** Each run's stored events in seq order; every id asked for is a key (an empty list for none). */
  byRuns(runIds: readonly string[]): Promise<Map<string, StoredRunEvent[]>>;
}
