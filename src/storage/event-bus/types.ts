// The event bus seam: how a run's events reach its subscribers, on this
// instance or another. The run that executes on an instance is the one
// publisher of its events (it assigns seq); subscribers anywhere replay the
// retained events after the seq they already have, then follow live, with no
// gap and no duplicate. Backends: memory.ts (one process, the default) and
// redis.ts (several instances); test/conformance/event-bus.ts holds both to
// the same rules.
import type { ConversationChange, RunEvent, RunEventBody } from "../../domain/events.ts";
import type { Subscriber } from "./subscriber.ts";

/** The log of a run a subscriber followed disappeared before its terminal event (the instance executing the run stopped). */
export class RunLogLostError extends Error {
  override name = "RunLogLostError";
  readonly code = "RUN_LOG_LOST";
  constructor(runId: string) {
    super(`the event log of run ${runId} is gone before the run finished (its instance stopped); resubscribe to read the outcome`);
  }
}

export interface EventBusOptions {
  /** Events kept per run for replay (`EVENT_RETENTION`); older ones are dropped and reported as a ReplayGapEvent. */
  retention: number;
  /** How long a finished run's events stay replayable (`EVENT_GRACE_MS`). */
  graceMs: number;
  /**
   * At most this many finished runs keep their events in this process's memory
   * for the grace period (`EVENT_GRACE_RUNS`); each run finishing beyond it
   * ends the oldest one's grace early (one a subscriber is still reading
   * keeps its grace). Bounds memory under a burst. Absent: no
   * bound. A backend that keeps logs elsewhere (Redis) keeps them there for
   * the grace period whatever this says.
   */
  graceRuns?: number;
  /** Unread live events a subscriber may hold before it is ended with SubscriberOverflowError (`SUBSCRIBER_QUEUE_LIMIT`). */
  subscriberQueueLimit: number;
  now?: () => Date;
}

/** The publishing end of one run's log, held by the instance that executes the run. */
export interface RunPublisher {
  readonly runId: string;
  readonly conversationId: string;
  /**
   * Assigns the next seq and hands the event to every subscriber, on every
   * instance, in call order, without waiting for any of them. A terminal status
   * event closes the log; publishing after it is an error.
   */
  publish(body: RunEventBody): RunEvent;
  /**
   * Resolves once every event published so far can be read by a subscriber on
   * any instance (at once for the memory bus). Rejects when the backend failed
   * to take one of them.
   */
  flushed(): Promise<void>;
}

export interface BusStats {
  runSubscribers: number;
  conversationSubscribers: number;
  changeSubscribers: number;
  /** Run logs held by this instance (open, or finished within the grace period). */
  logs: number;
}

export interface EventBus {
  /**
   * Opens the log of a run this instance executes. Opening a run twice is an
   * error. Subscribers on this instance see the log (and every event published
   * to it) at once; on other instances, once the publisher's flushed() resolves.
   */
  openRun(runId: string, conversationId: string): RunPublisher;
  /**
   * The retained events with seq > after, then live events until the terminal
   * one, then done. A ReplayGapEvent comes first when events the subscriber asks
   * for are no longer retained. (A backend that delivers asynchronously may
   * also send one later: when a burst of more than `retention` events is
   * trimmed before the subscriber's instance has read it.) Null when no
   * instance holds a log for the run (never opened, or finished longer than the
   * grace period ago): the caller answers from the run store. A backend shared
   * by several instances may also fail a subscriber whose log vanished before
   * its terminal event (the executing instance died); resubscribing then
   * answers null.
   */
  subscribeRun(runId: string, after?: number): Promise<Subscriber<RunEvent> | null>;
  /** Every event of every run of one conversation, from any instance, live (no replay), until unsubscribed. */
  subscribeConversation(conversationId: string): Promise<Subscriber<RunEvent>>;
  /** Tells every instance's conversationsChanged subscribers. */
  publishConversationChange(change: ConversationChange): Promise<void>;
  subscribeConversationChanges(): Promise<Subscriber<ConversationChange>>;
  /**
   * Called on this instance for every conversation change, from any instance
   * (this one's included); answers the removal. Unlike a subscriber, a listener
   * has no queue and is not counted in stats() (the run executor's queue looks).
   */
  onConversationChange(listener: (change: ConversationChange) => void): () => void;
  /**
   * Ends the log of a run whose publisher is gone (the instance executing it died
   * and recovery recorded the run), with `body` (a terminal status) after the
   * last event the log holds, so its subscribers on every instance get the
   * outcome. Null when no log exists, or it has already ended.
   */
  endAbandonedRun(runId: string, conversationId: string, body: RunEventBody): Promise<RunEvent | null>;
  /** Asks whichever instance executes the run to stop it (cancelRun sent to another instance). */
  requestCancel(runId: string): Promise<void>;
  /** Called on every instance for every cancel request; the executing one acts on it. Returns the unsubscribe function. */
  onCancelRequest(listener: (runId: string) => void): () => void;
  /** Resolves when the backend carries events now; throws, saying why, when it does not (readiness). */
  ping(): Promise<void>;
  /** Ends every subscriber of this instance and releases the backend's connections. */
  close(): Promise<void>;
  /** This instance's subscribers and logs, for leak checks and metrics. */
  stats(): BusStats;
}
