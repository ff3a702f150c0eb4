// The event bus for several instances sharing one Redis.
//
// Each run's log is a Redis Stream whose entry ids are `0-<seq>`: the stream
// orders, trims and replays by seq, so "replay everything after n, then live"
// is one range read followed by XREAD from the same id, with no gap and no
// duplicate. The stream is trimmed to exactly `retention` entries, so a replay
// reports the same gap as the memory bus would. Conversation events,
// conversation changes and cancel requests are live-only and go over pub/sub.
//
// Connections per instance, whatever the number of subscribers:
// - one for commands: publishes are batched per tick into one pipeline, in call
//   order, and replay reads go after the batch, so an instance reads its own
//   writes;
// - one in subscriber mode for the pub/sub channels;
// - one per FEEDS_PER_READER runs followed at once, each looping on a blocking
//   XREAD over all its runs. Subscribers of one run on one instance share a
//   feed (one cursor, each event parsed once) and each has its own bounded queue.
//
// Beside this file: redis-pipeline.ts (the per-tick command batches), redis-url.ts,
// redis-streams.ts (the replay read and the XREAD loop), feed.ts (joining and following a run, as
// the cluster's bus does too) and codec.ts (events as text).
import { randomUUID } from "node:crypto";
import { Redis, type RedisOptions } from "ioredis";
import type { ConversationChange, RunEvent, RunEventBody } from "../../domain/events.ts";
import { isTerminalEvent } from "../../domain/events.ts";
import { decodeChange, decodeEvent, encodeChange, encodeEvent } from "./codec.ts";
import { CommandPipeline, type Command, type OnReplies, type Reply } from "./redis-pipeline.ts";
import { decodeEntry, readRunLog, StreamReader, type FollowedStream, type RunLogSnapshot, type StreamEntry } from "./redis-streams.ts";
import { createSubscriber, SubscriberOverflowError, type Subscriber } from "./subscriber.ts";
import { deliver, joinReplay, type Cursor, type Joiner } from "./feed.ts";
import { describeUrl } from "./redis-url.ts";
import { Listeners } from "./listeners.ts";
import { RunLogLostError, type BusStats, type EventBus, type EventBusOptions, type RunPublisher } from "./types.ts";

export { RunLogLostError };

export interface RedisEventBusOptions extends EventBusOptions {
  /** Prefix of every key and channel the bus uses (default `runledger:`); instances share events only when they share it. */
  keyPrefix?: string;
  /** How long connecting and the first PING may take before connectRedisEventBus gives up (default 2000 ms). */
  connectTimeoutMs?: number;
  /**
   * How often an instance checks that the runs its subscribers follow still have
   * a log (default 5000 ms). A log vanishes before its terminal event only when
   * the instance executing the run died and stopped renewing it; its
   * subscribers then fail with RunLogLostError instead of waiting forever.
   */
  livenessCheckMs?: number;
  /** Told about errors no caller is waiting for (a reader's failed XREAD, a lost connection); ioredis reconnects by itself. Default: ignored. */
  onError?: (error: Error) => void;
  /** Told, for each event this instance reads for its subscribers that was published after it began following the run, how many ms after its publication it arrived (the instances' clocks may differ by up to MAX_CLOCK_SKEW_MS). */
  onDelivered?: (lagMs: number) => void;
}

/** Runs one reader connection follows at once; past it, another connection opens. Keeps each XREAD's key list short. */
const FEEDS_PER_READER = 64;
/**
 * Most entries one XREAD takes per run: one busy run cannot hold the reader for
 * long, and one read never hands a subscriber more than half its queue limit,
 * so a subscriber that keeps up is not cut off by the batching alone.
 */
const MAX_READ_COUNT = 1000;
/** An open run's log lives at least this long without being renewed, whatever the grace period. */
const MIN_OPEN_TTL_MS = 30_000;
/**
 * A finished run's log stays in Redis at least this long, whatever the grace
 * period: readers on other instances that were busy when the run finished must
 * still find its last events (the terminal one above all) when they read next.
 */
const MIN_FINISHED_TTL_MS = 1000;

/** One run followed by this instance, shared by all its subscribers here. */
interface Feed extends FollowedStream {
  readonly runId: string;
  /** seq of the last entry read; the next XREAD starts after it. null until a replay read has placed it. */
  cursor: number | null;
  readonly live: Map<Subscriber<RunEvent>, Cursor>;
  readonly joiners: Set<Joiner>;
  reader: StreamReader<Feed> | null;
  /** The terminal event has been read: nothing more will come. */
  ended: boolean;
  /** When this instance began following the run: events published before are replays, not deliveries. */
  readonly since: number;
}

interface LocalLog {
  finished: boolean;
  dropTimer?: NodeJS.Timeout;
}

interface ConversationChannel {
  readonly subs: Set<Subscriber<RunEvent>>;
  /** Settles with the SUBSCRIBE reply: from then on Redis delivers the channel's messages. */
  readonly subscribed: Promise<unknown>;
}

/**
 * Connects to the Redis at `url` (`REDIS_URL`) and returns a bus on it. Throws an
 * Error naming REDIS_URL when the URL is malformed or the server does not answer
 * a PING within `connectTimeoutMs`.
 */
export function connectRedisEventBus(url: string, options: RedisEventBusOptions): Promise<RedisEventBus> {
  return RedisEventBus.connect(url, options);
}

/** How long readiness waits for Redis's answer to PING. */
const PING_TIMEOUT_MS = 2_000;

export class RedisEventBus implements EventBus {
  readonly #url: string;
  readonly #options: Required<Omit<RedisEventBusOptions, "onError" | "onDelivered" | "graceRuns">> & Pick<RedisEventBusOptions, "onError" | "onDelivered">;
  readonly #prefix: string;
  readonly #command: Redis;
  readonly #pipeline: CommandPipeline;
  readonly #pubsub: Redis;
  readonly #readers: StreamReader<Feed>[] = [];
  readonly #instanceId = randomUUID();
  #readerCount = 0;

  readonly #logs = new Map<string, LocalLog>();
  readonly #feeds = new Map<string, Feed>();
  readonly #runSubs = new Set<Subscriber<RunEvent>>();
  readonly #conversations = new Map<string, ConversationChannel>();
  readonly #changeSubs = new Set<Subscriber<ConversationChange>>();
  readonly #cancelListeners = new Listeners<string>();
  readonly #changeListeners = new Listeners<ConversationChange>();

  readonly #timers: NodeJS.Timeout[] = [];
  /** Where connection errors go: noted while connecting, then handed to onError. */
  #onConnectionError: (error: Error) => void = () => {};
  #closed = false;

  static async connect(url: string, options: RedisEventBusOptions): Promise<RedisEventBus> {
    const target = describeUrl(url);
    const bus = new RedisEventBus(url, options);
    const timeoutMs = bus.#options.connectTimeoutMs;
    let lastError: Error | null = null;
    bus.#onConnectionError = (error) => (lastError = error);
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      });
      await Promise.race([
        (async () => {
          await Promise.all([bus.#command.connect(), bus.#pubsub.connect()]);
          await bus.#command.ping();
          // Subscribed before the bus is handed out: onCancelRequest cannot wait
          // for a SUBSCRIBE reply, and a change published after connect() returns
          // must reach this instance's subscribers.
          await bus.#pubsub.subscribe(bus.#changesChannel, bus.#cancelChannel);
        })(),
        timeout,
      ]);
    } catch (error) {
      bus.#command.disconnect();
      bus.#pubsub.disconnect();
      const cause = (lastError as Error | null)?.message ?? (error as Error).message;
      throw new Error(`REDIS_URL: cannot reach Redis at ${target}: ${cause}`);
    } finally {
      clearTimeout(timer);
    }
    bus.#onConnectionError = (error) => bus.#options.onError?.(error);
    bus.#start();
    return bus;
  }

  private constructor(url: string, options: RedisEventBusOptions) {
    this.#url = url;
    this.#options = {
      ...options,
      now: options.now ?? (() => new Date()),
      keyPrefix: options.keyPrefix ?? "runledger:",
      connectTimeoutMs: options.connectTimeoutMs ?? 2000,
      livenessCheckMs: options.livenessCheckMs ?? 5000,
    };
    this.#prefix = this.#options.keyPrefix;
    this.#command = new Redis(url, this.#connectionOptions("command", { lazyConnect: true }));
    // Subscribed again by #resubscribe: ioredis's own SUBSCRIBE after a reconnect has no handler (unhandled if the connection closes first).
    this.#pubsub = new Redis(url, this.#connectionOptions("pubsub", { lazyConnect: true, autoResubscribe: false }));
    this.#pipeline = new CommandPipeline(this.#command);
    // Without a listener ioredis prints every connection error to the console.
    for (const connection of [this.#command, this.#pubsub]) connection.on("error", (error: Error) => this.#onConnectionError(error));
  }

  #connectionOptions(role: string, extra: RedisOptions = {}): RedisOptions {
    return {
      // CLIENT LIST shows which deployment (prefix) and role each connection serves.
      connectionName: `${this.#prefix}bus-${role}`.replace(/[^\w:.-]/g, "_"),
      connectTimeout: this.#options.connectTimeoutMs,
      ...extra,
    };
  }

  #start() {
    this.#pubsub.on("message", (channel: string, message: string) => this.#onMessage(channel, message));
    this.#pubsub.on("ready", () => this.#resubscribe()); // every later "ready" is a new connection
    // An open run's log expires unless its instance renews it: a log whose
    // instance died goes away like a finished one.
    const renew = setInterval(() => this.#renewOpenLogs(), this.#openTtlMs / 3);
    const check = setInterval(() => this.#checkFeeds(), this.#options.livenessCheckMs);
    for (const timer of [renew, check]) {
      timer.unref();
      this.#timers.push(timer);
    }
  }

  /** Subscribes a pub/sub connection made again to every channel this bus listens on. */
  #resubscribe() {
    if (this.#closed) return;
    const channels = [this.#changesChannel, this.#cancelChannel, ...this.#conversations.keys()];
    this.#pubsub.subscribe(...channels).catch((error: Error) => this.#options.onError?.(error));
  }

  get #openTtlMs() {
    return Math.max(this.#options.graceMs, MIN_OPEN_TTL_MS);
  }
  get #changesChannel() {
    return `${this.#prefix}conversations-changed`;
  }
  get #cancelChannel() {
    return `${this.#prefix}cancel`;
  }
  #runKey(runId: string) {
    return `${this.#prefix}run:${runId}`;
  }
  #conversationChannel(conversationId: string) {
    return `${this.#prefix}conversation:${conversationId}`;
  }

  // ---- writing ----

  openRun(runId: string, conversationId: string): RunPublisher {
    this.#assertOpen();
    if (this.#logs.has(runId)) throw new Error(`run ${runId} already has an event log`);
    const log: LocalLog = { finished: false };
    this.#logs.set(runId, log);
    const key = this.#runKey(runId);
    const channel = this.#conversationChannel(conversationId);
    let nextSeq = 1;
    let failure: Error | null = null;
    let written: Promise<void> = Promise.resolve();
    const noteFailure: OnReplies = (replies, from, count) => {
      for (let i = from; i < from + count; i++) failure ??= replies[i]![0];
    };
    // The log exists (empty) from now on, so a subscriber on any instance gets
    // a subscription rather than null, as with the memory bus. MKSTREAM creates
    // an empty stream; the group it needs is dropped at once.
    const group = `open-${this.#instanceId}`;
    written = this.#pipeline.write(
      [
        ["xgroup", "CREATE", key, group, "$", "MKSTREAM"],
        ["xgroup", "DESTROY", key, group],
        ["pexpire", key, this.#openTtlMs],
      ],
      noteFailure,
    );
    return {
      runId,
      conversationId,
      publish: (body: RunEventBody): RunEvent => {
        if (log.finished) throw new Error(`run ${runId} has already published its terminal event`);
        if (this.#closed) throw new Error(`run ${runId}'s event log is closed`);
        const seq = nextSeq++;
        const event = { ...body, seq, runId, conversationId, at: this.#options.now() } as RunEvent;
        const json = encodeEvent(event);
        const commands: Command[] = [
          ["xadd", key, "MAXLEN", this.#options.retention, `0-${seq}`, "e", json],
          ["publish", channel, json],
        ];
        if (isTerminalEvent(event)) {
          log.finished = true;
          commands.push(["pexpire", key, Math.max(this.#options.graceMs, MIN_FINISHED_TTL_MS)]);
          log.dropTimer = setTimeout(() => {
            if (this.#logs.get(runId) === log) this.#logs.delete(runId);
          }, this.#options.graceMs);
          log.dropTimer.unref();
        }
        // Batches settle in order: awaiting the latest covers every earlier one.
        written = this.#pipeline.write(commands, noteFailure);
        return event;
      },
      flushed: async () => {
        await written;
        if (failure) throw failure;
      },
    };
  }

  #renewOpenLogs() {
    const commands: Command[] = [];
    for (const [runId, log] of this.#logs) if (!log.finished) commands.push(["pexpire", this.#runKey(runId), this.#openTtlMs]);
    if (commands.length) void this.#pipeline.writeForReplies(commands).then((replies) => this.#reportFirst(replies));
  }

  // ---- run subscriptions ----

  async subscribeRun(runId: string, after = 0): Promise<Subscriber<RunEvent> | null> {
    this.#assertOpen();
    let feed = this.#feeds.get(runId);
    if (!feed) {
      feed = { runId, key: this.#runKey(runId), cursor: null, live: new Map(), joiners: new Set(), reader: null, ended: false, since: Date.now() };
      this.#feeds.set(runId, feed);
    }
    // Already following this run from a point the subscriber has: nothing to
    // read back, the feed delivers every later event.
    if (feed.cursor !== null && !feed.ended && after >= feed.cursor) return this.#follow(feed, [], after + 1, false);

    const joiner: Joiner = { buffer: [], overflowed: false };
    feed.joiners.add(joiner);
    let snapshot: RunLogSnapshot;
    try {
      snapshot = await this.#snapshot(feed.key, after);
    } finally {
      feed.joiners.delete(joiner);
    }
    if (this.#closed) {
      this.#dropFeedIfIdle(feed);
      throw new Error("the event bus is closed");
    }
    if (!snapshot.exists) {
      this.#dropFeedIfIdle(feed);
      return null;
    }
    // The replay covers seqs up to the snapshot's last; the feed delivered
    // everything after its cursor, which was at most that, into the buffer.
    const { initial, next, ended } = joinReplay(snapshot.entries, joiner, after, snapshot.finished, this.#options.now);
    if (feed.cursor === null && !ended) {
      feed.cursor = snapshot.lastSeq;
      this.#attach(feed);
    }
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

  #snapshot(key: string, after: number): Promise<RunLogSnapshot> {
    // After this instance's queued publishes, so it reads its own writes.
    this.#pipeline.flush();
    return readRunLog(this.#command, key, after);
  }

  #attach(feed: Feed) {
    let reader = this.#readers.find((r) => r.feeds.size < FEEDS_PER_READER);
    if (!reader) {
      reader = new StreamReader(
        new Redis(this.#url, this.#connectionOptions(`reader-${this.#readerCount}`, { maxRetriesPerRequest: null })),
        `${this.#prefix}wake:${this.#instanceId}:${this.#readerCount++}`,
        (f, entries) => this.#onEntries(f, entries),
        (wakeKey) =>
          this.#pipeline.writeForReplies([
            ["xadd", wakeKey, "MAXLEN", 1, "*", "w", ""],
            ["pexpire", wakeKey, 60_000],
          ]),
        (error) => this.#options.onError?.(error),
        Math.max(1, Math.min(MAX_READ_COUNT, Math.floor(this.#options.subscriberQueueLimit / 2))),
      );
      this.#readers.push(reader);
    }
    feed.reader = reader;
    reader.add(feed);
  }

  #onEntries(feed: Feed, entries: StreamEntry[]) {
    for (const entry of entries) {
      if (feed.ended) return;
      const event = decodeEntry(entry);
      feed.cursor = event.seq;
      if (this.#options.onDelivered) {
        const published = event.at.getTime();
        if (published >= feed.since) this.#options.onDelivered(Math.max(0, Date.now() - published));
      }
      deliver(event, feed.joiners, feed.live, this.#options.subscriberQueueLimit, this.#options.now);
      if (isTerminalEvent(event)) {
        feed.ended = true;
        for (const sub of feed.live.keys()) sub.end();
        this.#detach(feed);
      }
    }
  }

  #detach(feed: Feed) {
    const reader = feed.reader;
    if (!reader) return;
    feed.reader = null;
    reader.remove(feed);
    // The first reader stays for the next run; extra ones go when idle.
    const index = this.#readers.indexOf(reader);
    if (reader.feeds.size === 0 && index > 0) {
      this.#readers.splice(index, 1);
      reader.close();
    }
  }

  #dropFeedIfIdle(feed: Feed) {
    if (feed.live.size > 0 || feed.joiners.size > 0) return;
    this.#detach(feed);
    if (this.#feeds.get(feed.runId) === feed) this.#feeds.delete(feed.runId);
  }

  /** Fails the subscribers of followed runs whose log vanished before its terminal event. */
  #checkFeeds() {
    const feeds = [...this.#feeds.values()].filter((f) => f.reader && !f.ended);
    if (!feeds.length) return;
    void this.#pipeline.writeForReplies(feeds.map((f) => ["exists", f.key])).then((replies) => {
      replies.forEach(([error, result], i) => {
        const feed = feeds[i]!;
        if (error) return this.#options.onError?.(error);
        if (result !== 0 || feed.ended || this.#feeds.get(feed.runId) !== feed) return;
        feed.ended = true;
        for (const sub of feed.live.keys()) sub.fail(new RunLogLostError(feed.runId));
        this.#detach(feed);
        this.#dropFeedIfIdle(feed);
      });
    });
  }

  // ---- pub/sub ----

  async subscribeConversation(conversationId: string): Promise<Subscriber<RunEvent>> {
    this.#assertOpen();
    const name = this.#conversationChannel(conversationId);
    let channel = this.#conversations.get(name);
    if (!channel) {
      channel = { subs: new Set(), subscribed: this.#pubsub.subscribe(name) };
      this.#conversations.set(name, channel);
    }
    const entry = channel;
    const sub = createSubscriber<RunEvent>(this.#options.subscriberQueueLimit, () => {
      entry.subs.delete(sub);
      if (entry.subs.size === 0 && this.#conversations.get(name) === entry) {
        this.#conversations.delete(name);
        // Ordered after the SUBSCRIBE on the same connection; a later
        // subscriber's SUBSCRIBE is ordered after this.
        if (!this.#closed) this.#pubsub.unsubscribe(name).catch((error: Error) => this.#options.onError?.(error));
      }
    });
    entry.subs.add(sub);
    try {
      await entry.subscribed;
    } catch (error) {
      await sub.return!();
      throw error;
    }
    return sub;
  }

  async publishConversationChange(change: ConversationChange): Promise<void> {
    this.#assertOpen();
    await this.#pipeline.writeOrThrow([["publish", this.#changesChannel, encodeChange(change)]]);
  }

  async subscribeConversationChanges(): Promise<Subscriber<ConversationChange>> {
    this.#assertOpen();
    const sub = createSubscriber<ConversationChange>(this.#options.subscriberQueueLimit, () => this.#changeSubs.delete(sub));
    this.#changeSubs.add(sub);
    return sub;
  }

  async endAbandonedRun(runId: string, conversationId: string, body: RunEventBody): Promise<RunEvent | null> {
    this.#assertOpen();
    const key = this.#runKey(runId);
    // The publisher is gone, so nothing appends meanwhile; XADD refuses an id at or below the last one anyway.
    const [exists, last] = (await this.#command.multi().exists(key).xrevrange(key, "+", "-", "COUNT", 1).exec())!.map(([error, reply]) => {
      if (error) throw error;
      return reply;
    }) as [number, StreamEntry[]];
    if (!exists) return null;
    const entry = last[0];
    if (entry && isTerminalEvent(decodeEntry(entry))) return null;
    const seq = entry ? Number(entry[0].split("-")[1]) + 1 : 1;
    const event = { ...body, seq, runId, conversationId, at: this.#options.now() } as RunEvent;
    const json = encodeEvent(event);
    await this.#pipeline.writeOrThrow([
      ["xadd", key, "MAXLEN", this.#options.retention, `0-${seq}`, "e", json],
      ["publish", this.#conversationChannel(conversationId), json],
      ["pexpire", key, Math.max(this.#options.graceMs, MIN_FINISHED_TTL_MS)],
    ]);
    return event;
  }

  async requestCancel(runId: string): Promise<void> {
    this.#assertOpen();
    await this.#pipeline.writeOrThrow([["publish", this.#cancelChannel, runId]]);
  }

  onCancelRequest(listener: (runId: string) => void): () => void {
    return this.#cancelListeners.add(listener);
  }

  onConversationChange(listener: (change: ConversationChange) => void): () => void {
    return this.#changeListeners.add(listener);
  }

  #onMessage(channel: string, message: string) {
    try {
      if (channel === this.#cancelChannel) this.#cancelListeners.call(message);
      else if (channel === this.#changesChannel) {
        const change = decodeChange(message);
        for (const sub of this.#changeSubs) sub.push(change);
        this.#changeListeners.call(change);
      } else {
        const entry = this.#conversations.get(channel);
        if (!entry || entry.subs.size === 0) return;
        const event = decodeEvent(message);
        for (const sub of entry.subs) sub.push(event);
      }
    } catch (error) {
      this.#options.onError?.(error as Error);
    }
  }

  // ---- lifecycle ----

  /** Both connections up, and Redis answering a PING within PING_TIMEOUT_MS (a command to a lost Redis would wait in the client's queue). */
  async ping(): Promise<void> {
    if (this.#closed) throw new Error("the event bus is closed");
    for (const [name, connection] of [
      ["command", this.#command],
      ["subscriber", this.#pubsub],
    ] as const) {
      if (connection.status !== "ready") throw new Error(`Redis ${name} connection is ${connection.status}`);
    }
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.#command.ping(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`Redis did not answer PING within ${PING_TIMEOUT_MS} ms`)), PING_TIMEOUT_MS);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const timer of this.#timers) clearInterval(timer);
    for (const log of this.#logs.values()) if (log.dropTimer) clearTimeout(log.dropTimer);
    this.#logs.clear();
    const readers = this.#readers.splice(0);
    for (const reader of readers) reader.close();
    if (readers.length) void this.#pipeline.write([["del", ...readers.map((r) => r.wakeKey)]]);
    for (const feed of this.#feeds.values()) feed.ended = true;
    for (const sub of this.#runSubs) sub.end();
    for (const channel of this.#conversations.values()) for (const sub of channel.subs) sub.end();
    for (const sub of this.#changeSubs) sub.end();
    this.#cancelListeners.clear();
    this.#changeListeners.clear();
    this.#pipeline.flush();
    // QUIT goes after the queued commands, so publishes made before close()
    // still land; a connection that cannot say goodbye in time is cut.
    const quit = Promise.allSettled([this.#command.quit(), this.#pubsub.quit()]);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([quit, new Promise((resolve) => (timer = setTimeout(resolve, this.#options.connectTimeoutMs)))]);
    clearTimeout(timer);
    this.#command.disconnect();
    this.#pubsub.disconnect();
  }

  stats(): BusStats {
    let conversationSubscribers = 0;
    for (const channel of this.#conversations.values()) conversationSubscribers += channel.subs.size;
    return {
      runSubscribers: this.#runSubs.size,
      conversationSubscribers,
      changeSubscribers: this.#changeSubs.size,
      logs: this.#logs.size,
    };
  }

  #reportFirst(replies: Reply[]) {
    const failed = replies.find(([error]) => error);
    if (failed) this.#options.onError?.(failed[0]!);
  }

  #assertOpen() {
    if (this.#closed) throw new Error("the event bus is closed");
  }
}
