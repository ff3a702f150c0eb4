// The event bus for one process: every run's log lives in this process's memory,
// and delivery is a synchronous push into each subscriber's bounded queue. It is
// the default backend and the reference the conformance suite was written from.
// The cluster bus (cluster.ts) keeps each worker's own runs in one of these and
// serves them to the other workers through tapRun.
import type { ConversationChange, RunEvent, RunEventBody } from "../../domain/events.ts";
import { isTerminalEvent } from "../../domain/events.ts";
import { Listeners } from "./listeners.ts";
import { createSubscriber, type Subscriber } from "./subscriber.ts";
import type { BusStats, EventBus, EventBusOptions, RunPublisher } from "./types.ts";

interface RunLog {
  readonly conversationId: string;
  /** The retained events, oldest first: at most `retention`. */
  events: RunEvent[];
  /** seq of events[0]. */
  firstSeq: number;
  nextSeq: number;
  finished: boolean;
  /**
   * Subscribers not yet released, each with the seq it asked to follow (only
   * later events reach it). A finished log's subscribers stay here until they
   * have read what is queued, so stats() counts every subscriber still held.
   */
  subscribers: Map<Subscriber<RunEvent>, number>;
  /** Taps (tapRun): other processes following the run; not counted as subscribers here. */
  taps: Set<RunTap>;
  dropTimer?: NodeJS.Timeout;
}

/** What tapRun hands every later event of a run to: a relay to another process. */
export interface RunTap {
  push(event: RunEvent): void;
  /** The terminal event was pushed, or the bus closed: nothing more comes. */
  end(): void;
}

/** A run's log as tapRun found it. */
export interface RunSnapshot {
  conversationId: string;
  /** The retained events with seq above the one asked for, oldest first (no replayGap: the reader tells gaps by seq). */
  events: RunEvent[];
  /** The seq of the last event published (0 when none). */
  lastSeq: number;
  /** The terminal event has been published. */
  finished: boolean;
  /** Stops the tap, if one was given. */
  untap(): void;
}

/** Hooks for a bus built on this one (cluster.ts). */
export interface MemoryBusHooks {
  /** Every event published here, after this process's subscribers have it (endAbandonedRun's too). */
  onPublish?(event: RunEvent): void;
  /** The last subscriber of a conversation's events here has gone. */
  onConversationIdle?(conversationId: string): void;
}

export class MemoryEventBus implements EventBus {
  readonly #logs = new Map<string, RunLog>();
  /** The finished logs still kept, oldest first (a Map iterates in insertion order). */
  readonly #finished = new Map<string, RunLog>();
  readonly #conversationSubs = new Map<string, Set<Subscriber<RunEvent>>>();
  readonly #changeSubs = new Set<Subscriber<ConversationChange>>();
  readonly #cancelListeners = new Listeners<string>();
  readonly #changeListeners = new Listeners<ConversationChange>();
  readonly #options: Required<Omit<EventBusOptions, "graceRuns">> & Pick<EventBusOptions, "graceRuns">;
  readonly #hooks: MemoryBusHooks;
  #closed = false;

  constructor(options: EventBusOptions, hooks: MemoryBusHooks = {}) {
    this.#options = { now: () => new Date(), ...options };
    this.#hooks = hooks;
  }

  /** Whether this process holds the run's log (open, or finished within its grace). */
  hasRun(runId: string): boolean {
    return this.#logs.has(runId);
  }

  openRun(runId: string, conversationId: string): RunPublisher {
    this.#assertOpen();
    if (this.#logs.has(runId)) throw new Error(`run ${runId} already has an event log`);
    const log: RunLog = { conversationId, events: [], firstSeq: 1, nextSeq: 1, finished: false, subscribers: new Map(), taps: new Set() };
    this.#logs.set(runId, log);
    return {
      runId,
      conversationId,
      publish: (body) => this.#publish(runId, log, body),
      flushed: () => Promise.resolve(),
    };
  }

  #publish(runId: string, log: RunLog, body: RunEventBody): RunEvent {
    if (log.finished) throw new Error(`run ${runId} has already published its terminal event`);
    if (this.#logs.get(runId) !== log) throw new Error(`run ${runId}'s event log is closed`);
    const event = { ...body, seq: log.nextSeq++, runId, conversationId: log.conversationId, at: this.#options.now() } as RunEvent;
    log.events.push(event);
    if (log.events.length > this.#options.retention) {
      log.events.shift();
      log.firstSeq += 1;
    }
    const terminal = isTerminalEvent(event);
    for (const [sub, after] of log.subscribers) {
      if (event.seq > after) sub.push(event);
      if (terminal) sub.end();
    }
    for (const tap of log.taps) {
      tap.push(event);
      if (terminal) tap.end();
    }
    if (terminal) log.taps.clear();
    const convSubs = this.#conversationSubs.get(log.conversationId);
    if (convSubs) for (const sub of convSubs) sub.push(event);
    this.#hooks.onPublish?.(event);
    if (terminal) {
      log.finished = true;
      log.dropTimer = setTimeout(() => this.#drop(runId, log), this.#options.graceMs);
      log.dropTimer.unref();
      this.#finished.set(runId, log);
      const bound = this.#options.graceRuns;
      if (bound !== undefined) {
        for (const [oldestId, oldest] of this.#finished) {
          if (this.#finished.size <= bound) break;
          // One still read by a subscriber stays (stats() counts it) until its grace ends.
          if (oldest.subscribers.size === 0) this.#drop(oldestId, oldest);
        }
      }
    }
    return event;
  }

  /** Ends a finished log's grace: later subscribers get null (the run store answers). Its subscribers keep what they hold. */
  #drop(runId: string, log: RunLog): void {
    clearTimeout(log.dropTimer);
    if (this.#finished.get(runId) === log) this.#finished.delete(runId);
    if (this.#logs.get(runId) === log) this.#logs.delete(runId);
  }

  async subscribeRun(runId: string, after = 0): Promise<Subscriber<RunEvent> | null> {
    this.#assertOpen();
    const log = this.#logs.get(runId);
    if (!log) return null;
    // Snapshot and registration happen in one synchronous step: no publish can
    // fall between them, so replay and live meet with no gap and no duplicate.
    const replay: RunEvent[] = [];
    if (after + 1 < log.firstSeq) {
      const toSeq = log.firstSeq - 1;
      replay.push({ type: "replayGap", fromSeq: after + 1, toSeq, seq: toSeq, runId, conversationId: log.conversationId, at: this.#options.now() });
    }
    for (const event of log.events) if (event.seq > after) replay.push(event);
    // The replay holds references to retained events, so it does not count
    // against the queue limit: a late subscriber to a long run is not cut off.
    const sub = createSubscriber<RunEvent>(this.#options.subscriberQueueLimit, () => log.subscribers.delete(sub), replay);
    log.subscribers.set(sub, after);
    if (log.finished) sub.end();
    return sub;
  }

  /**
   * The retained events with seq > after and, from the same instant, every later
   * event handed to `tap`, in one synchronous step, so the two meet with no gap
   * and no duplicate; null when this process holds no log for the run. For a bus
   * that serves this process's runs to others (cluster.ts).
   */
  tapRun(runId: string, after: number, tap?: RunTap): RunSnapshot | null {
    this.#assertOpen();
    const log = this.#logs.get(runId);
    if (!log) return null;
    const events = log.events.filter((event) => event.seq > after);
    if (tap && !log.finished) log.taps.add(tap);
    return {
      conversationId: log.conversationId,
      events,
      lastSeq: log.nextSeq - 1,
      finished: log.finished,
      untap: () => {
        if (tap) log.taps.delete(tap);
      },
    };
  }

  /** Hands an event of a run executing in another process to this process's subscribers of its conversation. */
  pushConversationEvent(event: RunEvent): void {
    const subs = this.#conversationSubs.get(event.conversationId);
    if (subs) for (const sub of subs) sub.push(event);
  }

  async subscribeConversation(conversationId: string): Promise<Subscriber<RunEvent>> {
    this.#assertOpen();
    let set = this.#conversationSubs.get(conversationId);
    if (!set) {
      set = new Set();
      this.#conversationSubs.set(conversationId, set);
    }
    const subs = set;
    const sub = createSubscriber<RunEvent>(this.#options.subscriberQueueLimit, () => {
      subs.delete(sub);
      if (subs.size === 0 && this.#conversationSubs.get(conversationId) === subs) {
        this.#conversationSubs.delete(conversationId);
        if (!this.#closed) this.#hooks.onConversationIdle?.(conversationId);
      }
    });
    subs.add(sub);
    return sub;
  }

  async publishConversationChange(change: ConversationChange): Promise<void> {
    this.#assertOpen();
    for (const sub of this.#changeSubs) sub.push(change);
    this.#changeListeners.call(change);
  }

  async subscribeConversationChanges(): Promise<Subscriber<ConversationChange>> {
    this.#assertOpen();
    const sub = createSubscriber<ConversationChange>(this.#options.subscriberQueueLimit, () => this.#changeSubs.delete(sub));
    this.#changeSubs.add(sub);
    return sub;
  }

  async endAbandonedRun(runId: string, _conversationId: string, body: RunEventBody): Promise<RunEvent | null> {
    const log = this.#logs.get(runId);
    if (!log || log.finished) return null;
    return this.#publish(runId, log, body);
  }

  async requestCancel(runId: string): Promise<void> {
    this.#assertOpen();
    this.#cancelListeners.call(runId);
  }

  onCancelRequest(listener: (runId: string) => void): () => void {
    return this.#cancelListeners.add(listener);
  }

  onConversationChange(listener: (change: ConversationChange) => void): () => void {
    return this.#changeListeners.add(listener);
  }

  /** In this process: up while it is open. */
  async ping(): Promise<void> {
    if (this.#closed) throw new Error("the event bus is closed");
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const log of this.#logs.values()) {
      for (const sub of log.subscribers.keys()) sub.end();
      for (const tap of log.taps) tap.end();
      log.taps.clear();
      if (log.dropTimer) clearTimeout(log.dropTimer);
    }
    this.#logs.clear();
    this.#finished.clear();
    for (const set of this.#conversationSubs.values()) for (const sub of set) sub.end();
    for (const sub of this.#changeSubs) sub.end();
    this.#cancelListeners.clear();
    this.#changeListeners.clear();
  }

  stats(): BusStats {
    let runSubscribers = 0;
    for (const log of this.#logs.values()) runSubscribers += log.subscribers.size;
    let conversationSubscribers = 0;
    for (const set of this.#conversationSubs.values()) conversationSubscribers += set.size;
    return { runSubscribers, conversationSubscribers, changeSubscribers: this.#changeSubs.size, logs: this.#logs.size };
  }

  #assertOpen() {
    if (this.#closed) throw new Error("the event bus is closed");
  }
}
