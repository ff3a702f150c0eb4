// The event bus for the workers of one cluster (WORKERS > 1, no REDIS_URL):
// each worker keeps the logs of the runs it executes in memory, as the memory
// bus does, and the others follow them through the primary's relay
// (cluster-relay.ts) over the IPC channel (cluster-protocol.ts).
//
// - A run's events stay where it executes until another worker asks. A
//   subscriber on worker B of a run on worker A asks the relay, which asks
//   every other worker; A answers with the retained events after the seq asked
//   for and, in the same synchronous step, taps the log (memory.ts, tapRun), so
//   every later event goes to B as it is published, in order, after that
//   answer: replay and live meet with no gap and no duplicate.
// - B follows each run once (a feed, shared by all its subscribers of that run,
//   each with its own bounded queue and cursor), as the Redis bus does: a later
//   subscriber that needs older events asks A for them while the feed keeps what
//   arrives meanwhile, and the two are merged by seq.
// - Conversation events go to the workers that watch the conversation; a watch
//   is in force on every worker before subscribeConversation returns.
//   Conversation changes go through the relay, which gives every worker all of
//   them in one order; cancel requests go to every worker.
// - A worker that dies takes its logs with it: its followers' feeds fail with
//   RunLogLostError, and the run store tells the outcome once recovery records it.
import { isTerminalEvent, type ConversationChange, type RunEvent, type RunEventBody } from "../../domain/events.ts";
import type { BusMessage, BusPort, FollowAnswer, Request } from "./cluster-protocol.ts";
import { MemoryEventBus } from "./memory.ts";
import { createSubscriber, SubscriberOverflowError, type Subscriber } from "./subscriber.ts";
import { deliver, joinReplay, type Cursor, type Joiner } from "./feed.ts";
import { RunLogLostError, type BusStats, type EventBus, type EventBusOptions, type RunPublisher } from "./types.ts";

export interface ClusterEventBusOptions extends EventBusOptions {
  /** Told about errors no caller waits for (a cancel listener that threw). */
  onError?: (error: Error) => void;
  /** Told, for each event of another worker's run that reaches this one, how many ms after its publication it arrived. */
  onDelivered?: (lagMs: number) => void;
  /** How long ping() waits for the relay (default 2000 ms). */
  pingTimeoutMs?: number;
}

/** One run of another worker followed here, shared by all its subscribers here. */
interface Feed {
  readonly runId: string;
  readonly id: number;
  /** The worker executing the run, once a follow request was answered. */
  owner: number | null;
  /** seq of the last event received; null until an answer has placed it. */
  cursor: number | null;
  /** A follow request naming this feed was sent and its tap is not known to be over. */
  tapping: boolean;
  readonly live: Map<Subscriber<RunEvent>, Cursor>;
  readonly joiners: Set<Joiner>;
  /** The terminal event has been received, or the feed ended: nothing more will come. */
  ended: boolean;
  /** When this worker began following the run: events published before are replays, not deliveries. */
  readonly since: number;
}

interface Pending {
  resolve(answer: { value: unknown; owner?: number }): void;
  reject(error: Error): void;
}

export class ClusterEventBus implements EventBus {
  readonly #port: BusPort;
  readonly #local: MemoryEventBus;
  readonly #options: ClusterEventBusOptions;
  readonly #now = () => this.#options.now?.() ?? new Date();
  readonly #stopListening: () => void;
  #nextId = 1;
  readonly #pending = new Map<number, Pending>();
  readonly #feeds = new Map<string, Feed>();
  readonly #feedsById = new Map<number, Feed>();
  readonly #runSubs = new Set<Subscriber<RunEvent>>();
  /** Taps this worker serves to others, by `${worker}:${feed}`. */
  readonly #taps = new Map<string, () => void>();
  /** Conversations other workers watch: conversation → their ids. */
  readonly #watchers = new Map<string, Set<number>>();
  /** Conversations watched here: conversation → the watch request. */
  readonly #watching = new Map<string, Promise<unknown>>();
  readonly #changeAcks = new Map<number, () => void>();
  #closed = false;

  constructor(port: BusPort, options: ClusterEventBusOptions) {
    this.#port = port;
    this.#options = options;
    this.#local = new MemoryEventBus(options, {
      onPublish: (event) => {
        const watchers = this.#watchers.get(event.conversationId);
        if (watchers?.size) this.#post({ bus: "cev", to: [...watchers], event });
      },
      onConversationIdle: (conversationId) => {
        if (!this.#watching.delete(conversationId)) return;
        this.#post({ bus: "unwatch", conversationId });
      },
    });
    this.#stopListening = port.onMessage((message) => this.#onMessage(message));
    this.#post({ bus: "hello" });
  }

  // ---- runs executing here ----

  openRun(runId: string, conversationId: string): RunPublisher {
    this.#assertOpen();
    // Other workers ask this one for the run's events, and it has every one as
    // soon as it is published: readable anywhere at once, as with the memory bus.
    return this.#local.openRun(runId, conversationId);
  }

  // ---- run subscriptions ----

  async subscribeRun(runId: string, after = 0): Promise<Subscriber<RunEvent> | null> {
    this.#assertOpen();
    if (this.#local.hasRun(runId)) return this.#local.subscribeRun(runId, after);
    let feed = this.#feeds.get(runId);
    if (!feed) {
      feed = { runId, id: this.#nextId++, owner: null, cursor: null, tapping: false, live: new Map(), joiners: new Set(), ended: false, since: Date.now() };
      this.#feeds.set(runId, feed);
      this.#feedsById.set(feed.id, feed);
    }
    // Already following the run from a point the subscriber has: nothing to ask for.
    if (feed.cursor !== null && !feed.ended && after >= feed.cursor) return this.#follow(feed, [], after + 1, false);

    const joiner: Joiner = { buffer: [], overflowed: false };
    feed.joiners.add(joiner);
    // The first asks for the live events too; the others only for what they lack.
    const tap = !feed.tapping;
    if (tap) feed.tapping = true;
    let answer: { value: unknown; owner?: number };
    try {
      answer = await this.#request({ op: "follow", runId, after, feed: tap ? feed.id : null });
    } catch (error) {
      if (tap) feed.tapping = false;
      throw error;
    } finally {
      feed.joiners.delete(joiner);
    }
    const found = answer.value as FollowAnswer | null;
    if (tap) {
      if (found && !found.finished) {
        feed.owner = answer.owner ?? null;
        feed.cursor = found.lastSeq;
      } else feed.tapping = false;
    }
    if (this.#closed) {
      this.#dropFeedIfIdle(feed);
      throw new Error("the event bus is closed");
    }
    if (!found) {
      this.#dropFeedIfIdle(feed);
      return null;
    }
    // The answer covers seqs up to its last; the feed delivered everything after that into the buffer.
    const { initial, next, ended } = joinReplay(found.events, joiner, after, found.finished, this.#now);
    const sub = this.#follow(feed, initial, next, ended);
    if (joiner.overflowed) sub.fail(new SubscriberOverflowError(this.#options.subscriberQueueLimit));
    return sub;
  }

  #follow(feed: Feed, initial: RunEvent[], next: number, ended: boolean): Subscriber<RunEvent> {
    const sub = createSubscriber<RunEvent>(
      this.#options.subscriberQueueLimit,
      () => {
        this.#runSubs.delete(sub);
        feed.live.delete(sub);
        this.#dropFeedIfIdle(feed);
      },
      initial,
    );
    this.#runSubs.add(sub);
    if (ended || feed.ended) sub.end();
    else feed.live.set(sub, { next });
    this.#dropFeedIfIdle(feed);
    return sub;
  }

  #onFeedEvent(feedId: number, event: RunEvent) {
    const feed = this.#feedsById.get(feedId);
    if (!feed || feed.ended) return;
    feed.cursor = event.seq;
    if (this.#options.onDelivered) {
      const published = event.at.getTime();
      if (published >= feed.since) this.#options.onDelivered(Math.max(0, Date.now() - published));
    }
    deliver(event, feed.joiners, feed.live, this.#options.subscriberQueueLimit, this.#now);
    if (isTerminalEvent(event)) {
      feed.ended = true;
      feed.tapping = false;
      for (const sub of feed.live.keys()) sub.end();
      this.#dropFeedIfIdle(feed);
    }
  }

  /** The feed's owner stopped serving it before its terminal event (its bus closed, or it died). */
  #loseFeed(feed: Feed) {
    if (feed.ended) return;
    feed.ended = true;
    feed.tapping = false;
    for (const sub of feed.live.keys()) sub.fail(new RunLogLostError(feed.runId));
    this.#dropFeedIfIdle(feed);
  }

  #dropFeedIfIdle(feed: Feed) {
    if (feed.live.size > 0 || feed.joiners.size > 0) return;
    if (feed.tapping && feed.owner !== null && !this.#closed) this.#post({ bus: "unfollow", to: feed.owner, feed: feed.id });
    feed.tapping = false;
    if (this.#feeds.get(feed.runId) === feed) this.#feeds.delete(feed.runId);
    this.#feedsById.delete(feed.id);
  }

  // ---- answering other workers ----

  #answerFollow(id: number, from: number, runId: string, after: number, feed: number | null) {
    let snapshot: ReturnType<MemoryEventBus["tapRun"]> = null;
    if (!this.#closed) {
      const key = `${from}:${feed}`;
      let sawTerminal = false;
      const tap =
        feed === null
          ? undefined
          : {
              push: (event: RunEvent) => {
                if (isTerminalEvent(event)) sawTerminal = true;
                this.#post({ bus: "ev", to: from, feed, event });
              },
              end: () => {
                this.#taps.delete(key);
                if (!sawTerminal) this.#post({ bus: "fend", to: from, feed });
              },
            };
      snapshot = this.#local.tapRun(runId, after, tap);
      if (snapshot && tap && !snapshot.finished) this.#taps.set(key, snapshot.untap);
    }
    const value: FollowAnswer | null = snapshot && {
      conversationId: snapshot.conversationId,
      events: snapshot.events,
      lastSeq: snapshot.lastSeq,
      finished: snapshot.finished,
    };
    this.#post({ bus: "res", id, value });
  }

  async #answerEnd(id: number, runId: string, conversationId: string, body: RunEventBody) {
    let value: RunEvent | null = null;
    try {
      if (!this.#closed) value = await this.#local.endAbandonedRun(runId, conversationId, body);
    } catch (error) {
      this.#options.onError?.(error as Error);
    }
    this.#post({ bus: "res", id, value });
  }

  #onMessage(message: BusMessage) {
    switch (message.bus) {
      case "ev":
        return this.#onFeedEvent(message.feed, message.event);
      case "res": {
        const pending = this.#pending.get(message.id);
        if (!pending) return;
        this.#pending.delete(message.id);
        return pending.resolve({ value: message.value, owner: message.owner });
      }
      case "req":
        if (message.from === undefined) return;
        if (message.op === "follow") return this.#answerFollow(message.id, message.from, message.runId, message.after, message.feed);
        if (message.op === "end") return void this.#answerEnd(message.id, message.runId, message.conversationId, message.body);
        return;
      case "cev":
        if (!this.#closed) this.#local.pushConversationEvent(message.event);
        return;
      case "watch": {
        let set = this.#watchers.get(message.conversationId);
        if (!set) this.#watchers.set(message.conversationId, (set = new Set()));
        set.add(message.from);
        return this.#post({ bus: "res", id: message.id, value: true });
      }
      case "unwatch":
        if (message.from !== undefined) this.#unwatch(message.conversationId, message.from);
        return;
      case "unfollow":
        this.#taps.get(`${message.from}:${message.feed}`)?.();
        this.#taps.delete(`${message.from}:${message.feed}`);
        return;
      case "fend": {
        const feed = this.#feedsById.get(message.feed);
        if (feed) this.#loseFeed(feed);
        return;
      }
      case "change":
        if (!this.#closed) void this.#local.publishConversationChange(message.change);
        if (message.ack !== undefined) {
          this.#changeAcks.get(message.ack)?.();
          this.#changeAcks.delete(message.ack);
        }
        return;
      case "cancel":
        if (this.#closed) return;
        this.#local.requestCancel(message.runId).catch((error: Error) => this.#options.onError?.(error));
        return;
      case "gone":
        return this.#onGone(message.worker);
      default:
        return;
    }
  }

  #unwatch(conversationId: string, worker: number) {
    const set = this.#watchers.get(conversationId);
    if (!set) return;
    set.delete(worker);
    if (set.size === 0) this.#watchers.delete(conversationId);
  }

  #onGone(worker: number) {
    for (const feed of [...this.#feeds.values()]) if (feed.owner === worker) this.#loseFeed(feed);
    for (const [conversationId, set] of this.#watchers) if (set.has(worker)) this.#unwatch(conversationId, worker);
    for (const [key, untap] of this.#taps) {
      if (key.startsWith(`${worker}:`)) {
        untap();
        this.#taps.delete(key);
      }
    }
  }

  // ---- conversations, changes, cancels ----

  async subscribeConversation(conversationId: string): Promise<Subscriber<RunEvent>> {
    this.#assertOpen();
    const sub = await this.#local.subscribeConversation(conversationId);
    let watching = this.#watching.get(conversationId);
    if (!watching) {
      watching = this.#request({ op: "watch", conversationId });
      this.#watching.set(conversationId, watching);
    }
    try {
      await watching;
    } catch (error) {
      if (this.#watching.get(conversationId) === watching) this.#watching.delete(conversationId);
      await sub.return!();
      throw error;
    }
    return sub;
  }

  async publishConversationChange(change: ConversationChange): Promise<void> {
    this.#assertOpen();
    // Delivered here when the relay sends it back, in the one order every worker sees.
    const ack = this.#nextId++;
    const echoed = new Promise<void>((resolve) => this.#changeAcks.set(ack, resolve));
    this.#post({ bus: "change", change, ack });
    await echoed;
  }

  subscribeConversationChanges(): Promise<Subscriber<ConversationChange>> {
    this.#assertOpen();
    return this.#local.subscribeConversationChanges();
  }

  async endAbandonedRun(runId: string, conversationId: string, body: RunEventBody): Promise<RunEvent | null> {
    this.#assertOpen();
    const here = await this.#local.endAbandonedRun(runId, conversationId, body);
    if (here) return here;
    return (await this.#request({ op: "end", runId, conversationId, body })).value as RunEvent | null;
  }

  async requestCancel(runId: string): Promise<void> {
    this.#assertOpen();
    this.#post({ bus: "cancel", runId });
    await this.#local.requestCancel(runId);
  }

  onCancelRequest(listener: (runId: string) => void): () => void {
    return this.#local.onCancelRequest(listener);
  }

  onConversationChange(listener: (change: ConversationChange) => void): () => void {
    return this.#local.onConversationChange(listener);
  }

  // ---- lifecycle ----

  /** Up while open and the relay answers within pingTimeoutMs. */
  async ping(): Promise<void> {
    this.#assertOpen();
    const timeoutMs = this.#options.pingTimeoutMs ?? 2000;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.#request({ op: "ping" }),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`the primary process did not answer within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const feed of this.#feeds.values()) feed.ended = true;
    for (const sub of [...this.#runSubs]) sub.end();
    // Ends this worker's subscribers, and its taps, which tell their followers.
    await this.#local.close();
    this.#taps.clear();
    this.#watchers.clear();
    this.#watching.clear();
    this.#post({ bus: "bye" });
    this.#port.flush();
    this.#stopListening();
    for (const pending of this.#pending.values()) pending.reject(new Error("the event bus is closed"));
    this.#pending.clear();
    for (const ack of this.#changeAcks.values()) ack();
    this.#changeAcks.clear();
  }

  stats(): BusStats {
    const local = this.#local.stats();
    return { ...local, runSubscribers: local.runSubscribers + this.#runSubs.size };
  }

  #request(request: Request): Promise<{ value: unknown; owner?: number }> {
    if (this.#closed) return Promise.reject(new Error("the event bus is closed"));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#post({ bus: "req", id, ...request });
    });
  }

  #post(message: BusMessage) {
    this.#port.post(message);
  }

  #assertOpen() {
    if (this.#closed) throw new Error("the event bus is closed");
  }
}
