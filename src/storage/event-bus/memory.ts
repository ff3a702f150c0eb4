// The event bus: the seam between runs (publishers) and subscriptions. This is
// the in-memory backend for one process; another backend (Redis, say) implements
// the same interface and passes the same conformance suite.
import type { ConversationChange, RunEvent, RunEventBody } from "../../domain/events.ts";
import { isTerminalEvent } from "../../domain/events.ts";
import { createSubscriber, type Subscriber } from "./subscriber.ts";
import type { EventBus, EventBusOptions, RunPublisher } from "./types.ts";

interface RunLog {
  conversationId: string;
  events: RunEvent[];
  /** seq of events[0]. */
  firstSeq: number;
  nextSeq: number;
  finished: boolean;
  /** Live subscribers, each with the seq it asked to follow (only later events reach it). */
  subscribers: Map<Subscriber<RunEvent>, number>;
  dropTimer?: NodeJS.Timeout;
}

export class MemoryEventBus implements EventBus {
  readonly #logs = new Map<string, RunLog>();
  readonly #conversationSubs = new Map<string, Set<Subscriber<RunEvent>>>();
  readonly #changeSubs = new Set<Subscriber<ConversationChange>>();
  readonly #options: Required<EventBusOptions>;

  constructor(options: EventBusOptions) {
    this.#options = { now: () => new Date(), ...options };
  }

  readonly #cancelListeners = new Set<(runId: string) => void>();

  openRun(runId: string, conversationId: string): RunPublisher {
    if (this.#logs.has(runId)) throw new Error(`run ${runId} already has an event log`);
    this.#logs.set(runId, { conversationId, events: [], firstSeq: 1, nextSeq: 1, finished: false, subscribers: new Map() });
    return { runId, conversationId, publish: (body) => this.#publish(runId, body), flushed: () => Promise.resolve() };
  }

  #publish(runId: string, body: RunEventBody): RunEvent {
    const log = this.#logs.get(runId);
    if (!log) throw new Error(`run ${runId} has no open event log`);
    if (log.finished) throw new Error(`run ${runId} has already published its terminal event`);
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
    const convSubs = this.#conversationSubs.get(log.conversationId);
    if (convSubs) for (const sub of convSubs) sub.push(event);
    if (terminal) {
      log.finished = true;
      log.dropTimer = setTimeout(() => this.#logs.delete(runId), this.#options.graceMs);
      log.dropTimer.unref();
    }
    return event;
  }

  async subscribeRun(runId: string, after = 0): Promise<Subscriber<RunEvent> | null> {
    const log = this.#logs.get(runId);
    if (!log) return null;
    // Snapshot and registration happen in one synchronous step: no publish can
    // fall between them, so replay and live meet with no gap and no duplicate.
    const replay: RunEvent[] = [];
    if (after + 1 < log.firstSeq) {
      const at = this.#options.now();
      replay.push({ type: "replayGap", fromSeq: after + 1, toSeq: log.firstSeq - 1, seq: log.firstSeq - 1, runId, conversationId: log.conversationId, at });
    }
    for (const event of log.events) if (event.seq > after) replay.push(event);
    // The replay holds references to retained events, so it does not count
    // against the queue limit: a late subscriber to a long run is not cut off.
    const sub = createSubscriber<RunEvent>(this.#options.subscriberQueueLimit, () => log.subscribers.delete(sub), replay);
    if (log.finished) sub.end();
    else log.subscribers.set(sub, after);
    return sub;
  }

  async subscribeConversation(conversationId: string): Promise<Subscriber<RunEvent>> {
    let set = this.#conversationSubs.get(conversationId);
    if (!set) {
      set = new Set();
      this.#conversationSubs.set(conversationId, set);
    }
    const subs = set;
    const sub = createSubscriber<RunEvent>(this.#options.subscriberQueueLimit, () => {
      subs.delete(sub);
      if (subs.size === 0 && this.#conversationSubs.get(conversationId) === subs) this.#conversationSubs.delete(conversationId);
    });
    subs.add(sub);
    return sub;
  }

  async publishConversationChange(change: ConversationChange): Promise<void> {
    for (const sub of this.#changeSubs) sub.push(change);
  }

  async subscribeConversationChanges(): Promise<Subscriber<ConversationChange>> {
    const sub = createSubscriber<ConversationChange>(this.#options.subscriberQueueLimit, () => this.#changeSubs.delete(sub));
    this.#changeSubs.add(sub);
    return sub;
  }

  async requestCancel(runId: string): Promise<void> {
    for (const listener of this.#cancelListeners) listener(runId);
  }

  onCancelRequest(listener: (runId: string) => void): () => void {
    this.#cancelListeners.add(listener);
    return () => this.#cancelListeners.delete(listener);
  }

  async close(): Promise<void> {
    for (const log of this.#logs.values()) {
      for (const sub of log.subscribers.keys()) sub.end();
      if (log.dropTimer) clearTimeout(log.dropTimer);
    }
    this.#logs.clear();
    for (const set of this.#conversationSubs.values()) for (const sub of set) sub.end();
    for (const sub of this.#changeSubs) sub.end();
  }

  stats() {
    let runSubscribers = 0;
    for (const log of this.#logs.values()) runSubscribers += log.subscribers.size;
    let conversationSubscribers = 0;
    for (const set of this.#conversationSubs.values()) conversationSubscribers += set.size;
    return { runSubscribers, conversationSubscribers, changeSubscribers: this.#changeSubs.size, logs: this.#logs.size };
  }
}
