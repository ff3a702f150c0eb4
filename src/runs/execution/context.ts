// What the parts of the execution side share: the runs this instance executes
// or queued, and the dependencies they run with. One object per run service,
// made by run-executor.ts; every other part takes it, so none of them imports
// another's state.
import type { ConversationChange } from "../../domain/events.ts";
import type { RunRecord } from "../../domain/records.ts";
import type { Principal } from "../../domain/principal.ts";
import type { RunOrigin, RunTelemetry } from "../../telemetry/run-telemetry.ts";
import type { RunServiceOptions } from "../options.ts";

/** What executing runs needs of the run service's options. */
export type ExecutionOptions = Pick<
  RunServiceOptions,
  "store" | "checkpointReads" | "toolJournal" | "runEvents" | "bus" | "agent" | "ownerId" | "maxClockSkewMs" | "logger" | "admission"
>;

export interface ActiveRun {
  conversationId: string;
  controller: AbortController;
  /** Settles once the outcome is committed and the terminal event published. */
  finished: Promise<RunRecord | null>;
}

/** A run paused at a model call the model answered 503, back in the queue until this instance admits it again. */
export interface HeldRun {
  /** Its backoff is over: it may be claimed. */
  ready: boolean;
  /** Lets the call be sent again. */
  admit: () => void;
}

export interface ExecutionContext {
  readonly options: ExecutionOptions;
  readonly now: () => Date;
  readonly telemetry: RunTelemetry;
  /** The runs executing on this instance, those paused after a 503 included. */
  readonly active: Map<string, ActiveRun>;
  /**
   * Runs paused here at a model call the model answered 503, back in the queue
   * (requeueHeld) until this instance admits them again: `ready` once their
   * backoff is over; `admit` lets the call be sent again.
   */
  readonly held: Map<string, HeldRun>;
  /** The callers of runs this instance queued, for when it claims them itself (claims and a JWT are never stored). */
  readonly queuedBy: Map<string, Principal>;
  /** Where the spans of runs this instance queued hang (the request that queued them), for when it claims them itself. */
  readonly queuedOrigin: Map<string, RunOrigin>;
  /** Looks at the queue (claim.ts): room and an endpoint's slot freed let the next queued run go. */
  claimQueued(): Promise<void>;
  announce(change: ConversationChange): void;
}
