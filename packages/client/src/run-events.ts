// Following one run's events until it ends, resuming exactly where it left
// off: every (re)subscription asks for the events after the last seq applied,
// each event is handed over once and in seq order, a skipped seq or a
// ReplayGapEvent is reported as a gap, and the terminal status event ends it.
// The stores follow runs with followRun; followRunEvents is the same for an
// app that renders events its own way (with its own selection of them).
import type { RunledgerClient } from "./client.js";
import { coreOf, type ActionError } from "./core.js";
import { RUN_EVENTS, type Document } from "./documents.js";
import type { Gap } from "./run-log.js";
import { keepSubscribed } from "./stream.js";
import type { Transport } from "./transport.js";

/** What every runEvents selection has: the fields followRunEvents reads. */
export interface RunEventBase {
  __typename: string;
  seq: number;
  runId: string;
  /** RunStatusEvent's (a string: an app's own generated types may add values to come). */
  status?: string;
  /** ReplayGapEvent's. */
  fromSeq?: number;
  toSeq?: number;
}

/** A runEvents(runId, after) subscription document selecting `E`. */
export type RunEventsDocument<E extends RunEventBase> = Document<{ runEvents: E }, { runId: string | number; after?: number | null }>;

/** Why following stopped for good: the run's terminal status event, or the server refusing the stream (`error` says why). */
export type RunEventsEnd = { reason: "terminal"; error: null } | { reason: "refused"; error: ActionError };

function isActive(status: string | undefined): boolean {
  return status === "QUEUED" || status === "RUNNING";
}

export interface FollowRunHandlers<E extends RunEventBase> {
  document: RunEventsDocument<E>;
  /** The last seq the follower has applied: every (re)subscription asks for what came after it. */
  lastSeq(): number;
  /** An event, as the server sent it (a replay may repeat one the follower applied already). */
  event(event: E): void;
  /** Following stopped for good (not called after the returned stop). */
  end(end: RunEventsEnd): void;
  /** Asked when the stream ends unasked: false lets it go quietly (its follower moved on). Default: wanted. */
  wanted?(): boolean;
}

/**
 * Follows a run's events: after a dropped connection, a server restart or a
 * slow-subscriber cut it subscribes again after `lastSeq()`. It stops after
 * the terminal status event, or when the server refuses the stream (the run
 * is gone, or not the caller's; or eight ends in a row while connected).
 */
export function followRun<E extends RunEventBase>(transport: Transport, runId: string, handlers: FollowRunHandlers<E>): () => void {
  let over = false;
  const stop = keepSubscribed(transport, handlers.document, () => ({ runId, after: handlers.lastSeq() }), {
    next: ({ runEvents: event }) => {
      if (over) return;
      handlers.event(event);
      // The handler may have stopped it (its own terminal check): then nothing more is said.
      if (!over && event.__typename === "RunStatusEvent" && !isActive(event.status)) {
        over = true;
        stop();
        handlers.end({ reason: "terminal", error: null });
      }
    },
    ended: (end, failures) => {
      if (over || handlers.wanted?.() === false) return false;
      if (end.code === "NOT_FOUND" || end.code === "VALIDATION" || (!end.connectionLost && failures >= 8)) {
        over = true;
        handlers.end({ reason: "refused", error: { code: end.code ?? "STREAM_ENDED", message: end.message ?? "the run's events stopped" } });
        return false;
      }
      return true;
    },
  });
  return () => {
    over = true;
    stop();
  };
}

export interface RunEventsOptions<E extends RunEventBase> {
  /** Follow from after this seq: the last one the caller already has (0, the default: from the run's first event). */
  after?: number;
  /**
   * Your own selection of `runEvents(runId: $runId, after: $after)`, for
   * fields the client does not select (a CheckpointEvent's checkpoint, say).
   * It must select `__typename seq runId`, RunStatusEvent's `status` and
   * ReplayGapEvent's `fromSeq toSeq`. Default: the client's own selection.
   */
  document?: RunEventsDocument<E>;
  /**
   * Each event once, in seq order. `gap`: events before it that will never
   * come (a seq skipped, or the server's ReplayGapEvent for events it no
   * longer keeps); read the run's stored record for what they held.
   */
  onEvent(event: E, gap: Gap | null): void;
  /** Following stopped for good: after the terminal status event, or refused (a deleted run, another user's). */
  onEnd?(end: RunEventsEnd): void;
}

/**
 * Follows one run's events until it ends, on the client's connection, with
 * exact resume: nothing twice, nothing skipped without saying so. Returns the
 * function that stops following (the same as detach: nothing is cancelled).
 */
export function followRunEvents<E extends RunEventBase = RunEventBase>(client: RunledgerClient, runId: string, options: RunEventsOptions<E>): () => void {
  let lastSeq = options.after ?? 0;
  return followRun<E>(coreOf(client).transport, runId, {
    document: options.document ?? (RUN_EVENTS as unknown as RunEventsDocument<E>),
    lastSeq: () => lastSeq,
    event: (event) => {
      if (event.runId !== runId || event.seq <= lastSeq) return;
      let gap: Gap | null = null;
      if (event.__typename === "ReplayGapEvent" && event.fromSeq !== undefined && event.toSeq !== undefined)
        gap = { fromSeq: event.fromSeq, toSeq: event.toSeq, refilled: false };
      else if (event.seq > lastSeq + 1) gap = { fromSeq: lastSeq + 1, toSeq: event.seq - 1, refilled: false };
      lastSeq = event.seq;
      options.onEvent(event, gap);
    },
    end: (end) => options.onEnd?.(end),
  });
}
