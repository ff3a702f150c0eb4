// The event bus's conformance suite: every EventBus backend must pass it. It
// speaks of two instances, A and B, that share one backend (for a single-process
// backend they are the same object): a run executes on A and is followed from
// either, which is how several API instances behind a load balancer use the bus.
import { randomUUID } from "node:crypto";
import { describe, expect, it, onTestFailed } from "vitest";
import type { ConversationChange, RunEvent, RunEventBody } from "../../src/domain/events.ts";
import { SubscriberOverflowError } from "../../src/storage/event-bus/subscriber.ts";
import type { EventBus, EventBusOptions } from "../../src/storage/event-bus/types.ts";

export interface EventBusPair {
  /** Instance A: in these tests, the one executing the runs. */
  a: EventBus;
  /** Instance B, sharing A's backend; the same object as A for a single-process backend. */
  b: EventBus;
  /** Closes both instances and removes what they left in the backend. */
  close(): Promise<void>;
}

/** Creates two instances over one backend; every call must be isolated from the others (its own keys, say). */
export type EventBusBackend = (options: EventBusOptions) => Promise<EventBusPair>;

const DEFAULTS: EventBusOptions = { retention: 10_000, graceMs: 60_000, subscriberQueueLimit: 1000 };
/** The longest any single awaited delivery may take; a guard, not a pace. */
const GUARD_MS = 5000;

const token = (text: string): RunEventBody => ({ type: "token", text, messageId: "m1", node: "agent" });
const running: RunEventBody = { type: "status", status: "running", errorCode: null, errorMessage: null };
const completed: RunEventBody = { type: "status", status: "completed", errorCode: null, errorMessage: null };
const seqs = (events: RunEvent[]) => events.map((e) => e.seq);
const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);
const ids = () => ({ runId: randomUUID(), conversationId: randomUUID() });

/** Rejects when `promise` has not settled within `ms`: a hang fails the test with a name instead of a timeout. */
function within<T>(promise: Promise<T>, what: string, ms = GUARD_MS): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
    }),
  ]);
}

/** Reads until the subscriber ends. */
function drain<T>(sub: AsyncIterator<T>, what = "the subscriber to end", ms = GUARD_MS): Promise<T[]> {
  const read = async () => {
    const out: T[] = [];
    for (;;) {
      const result = await sub.next();
      if (result.done) return out;
      out.push(result.value);
    }
  };
  return within(read(), what, ms);
}

/** Reads exactly `n` items. */
function take<T>(sub: AsyncIterator<T>, n: number, what = `${n} items`): Promise<T[]> {
  const read = async () => {
    const out: T[] = [];
    while (out.length < n) {
      const result = await sub.next();
      if (result.done) throw new Error(`ended after ${out.length} of ${n} items`);
      out.push(result.value);
    }
    return out;
  };
  return within(read(), what);
}

/** Polls `check` until it holds: for what no event announces (a grace period running out). */
async function until(check: () => boolean | Promise<boolean>, what: string, ms = GUARD_MS): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A seeded generator (mulberry32), so a failing interleaving can be replayed. */
function random(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const turn = () => new Promise<void>((r) => setImmediate(r));

export function describeEventBusConformance(name: string, backend: EventBusBackend) {
  describe(`EventBus conformance: ${name}`, () => {
    async function withPair(options: Partial<EventBusOptions>, fn: (pair: EventBusPair) => Promise<void>) {
      const pair = await backend({ ...DEFAULTS, ...options });
      try {
        await fn(pair);
        // Every test ends its subscribers: none may be left registered (a leak).
        for (const bus of [pair.a, pair.b]) expect(bus.stats()).toMatchObject({ runSubscribers: 0, conversationSubscribers: 0, changeSubscribers: 0 });
      } finally {
        await pair.close();
      }
    }

    it("numbers a run's events from 1 in publish order; a subscriber on the other instance reads exactly them", () =>
      withPair({}, async ({ a, b }) => {
        const { runId, conversationId } = ids();
        const run = a.openRun(runId, conversationId);
        expect(run).toMatchObject({ runId, conversationId });
        await run.flushed();
        const sub = (await b.subscribeRun(runId))!;
        expect(sub).not.toBeNull();
        const bodies: RunEventBody[] = [
          running,
          { type: "checkpoint", checkpointId: "cp-1", conversationId },
          { type: "toolCall", toolCallId: "call-1", name: "calculator", args: { expression: "17 * 3", nested: [1, { deep: null }] }, attempt: 1 },
          { type: "toolResult", toolCallId: "call-1", name: "calculator", content: "51", isError: false, attempt: 2 },
          ...range(1, 20).map((i) => token(`t${i} "quoted" ünïcode`)),
          { type: "status", status: "failed", errorCode: "MODEL_ERROR", errorMessage: "boom" },
        ];
        const published = bodies.map((body) => run.publish(body));
        expect(seqs(published)).toEqual(range(1, bodies.length));
        for (const event of published) {
          expect(event).toMatchObject({ runId, conversationId });
          expect(event.at).toBeInstanceOf(Date);
        }
        const received = await drain(sub);
        // Same seq, same order, same content; `at` is a Date on both sides.
        expect(received).toEqual(published);
        expect(received.every((e) => e.at instanceof Date)).toBe(true);
        expect(b.stats().runSubscribers).toBe(0);
      }));

    it("hands over Dates at any depth as Dates, live, on replay and per conversation; strings that look like dates stay strings", () =>
      withPair({}, async ({ a, b }) => {
        const { runId, conversationId } = ids();
        const run = a.openRun(runId, conversationId);
        run.publish(running);
        await run.flushed();
        const live = (await b.subscribeRun(runId))!;
        const perConversation = await b.subscribeConversation(conversationId);
        const createdAt = new Date("2026-12-01T10:00:00.123Z");
        const published = [
          // As the run service publishes a run that paused on an interrupt.
          run.publish({
            type: "interrupt",
            interrupt: { id: "i-1", node: "approve", value: { question: "ok?", askedAt: "2026-12-01T09:59:59.000Z" }, runId, conversationId, createdAt },
          }),
          run.publish({
            type: "custom",
            name: "dates",
            data: { when: createdAt, list: [new Date(0), { deeper: [createdAt] }], text: "2026-12-01T10:00:00.123Z" },
          }),
          run.publish({ type: "status", status: "waiting", errorCode: null, errorMessage: null }),
        ];
        const replayed = (await drain((await b.subscribeRun(runId))!)).slice(1);
        for (const got of [(await drain(live)).slice(1), await take(perConversation, 3, "the conversation's events"), replayed]) {
          expect(got).toEqual(published);
          const [interrupt, custom] = got as [Extract<RunEvent, { type: "interrupt" }>, Extract<RunEvent, { type: "custom" }>];
          expect(interrupt.interrupt.createdAt).toBeInstanceOf(Date);
          expect(interrupt.interrupt.createdAt.toISOString()).toBe("2026-12-01T10:00:00.123Z");
          expect((interrupt.interrupt.value as { askedAt: unknown }).askedAt).toBe("2026-12-01T09:59:59.000Z");
          const data = custom.data as { when: Date; list: [Date, { deeper: [Date] }]; text: string };
          expect(data.when).toBeInstanceOf(Date);
          expect(data.list[0]).toBeInstanceOf(Date);
          expect(data.list[1].deeper[0]).toBeInstanceOf(Date);
          expect(data.text).toBe("2026-12-01T10:00:00.123Z");
        }
        await perConversation.return!();
      }));

    it("replays the retained events after 0, the middle and the last seq, then continues live", () =>
      withPair({}, async ({ a, b }) => {
        const { runId, conversationId } = ids();
        const run = a.openRun(runId, conversationId);
        run.publish(running);
        for (let i = 2; i <= 10; i++) run.publish(token(`t${i}`));
        await run.flushed();
        const subs = await Promise.all([
          b.subscribeRun(runId, 0).then((sub) => ({ after: 0, sub })),
          b.subscribeRun(runId, 5).then((sub) => ({ after: 5, sub })),
          b.subscribeRun(runId, 10).then((sub) => ({ after: 10, sub })),
          a.subscribeRun(runId, 10).then((sub) => ({ after: 10, sub })),
          a.subscribeRun(runId).then((sub) => ({ after: 0, sub })),
        ]);
        const results = subs.map(({ after, sub }) => ({ after, events: drain(sub!) }));
        for (let i = 11; i <= 15; i++) run.publish(token(`t${i}`));
        run.publish(completed);
        for (const { after, events } of results) {
          const got = await events;
          expect(seqs(got)).toEqual(range(after + 1, 16));
          expect(got.map((e) => (e.type === "token" ? e.text : e.type))).toEqual(
            range(after + 1, 16).map((seq) => (seq === 1 || seq === 16 ? "status" : `t${seq}`)),
          );
        }
      }));

    it("an opened run has a log before its first event: subscribers get a subscription, not null", () =>
      withPair({}, async ({ a, b }) => {
        const { runId, conversationId } = ids();
        const run = a.openRun(runId, conversationId);
        await run.flushed();
        const onB = (await b.subscribeRun(runId))!;
        const onA = (await a.subscribeRun(runId))!;
        expect(onB).not.toBeNull();
        expect(onA).not.toBeNull();
        run.publish(running);
        run.publish(completed);
        expect(seqs(await drain(onB))).toEqual([1, 2]);
        expect(seqs(await drain(onA))).toEqual([1, 2]);
      }));

    it("the executing instance reads its own writes: subscribing there right after publishing, without flushed()", () =>
      withPair({}, async ({ a }) => {
        const { runId, conversationId } = ids();
        const run = a.openRun(runId, conversationId);
        run.publish(running);
        run.publish(token("one"));
        const sub = (await a.subscribeRun(runId))!;
        expect(sub).not.toBeNull();
        run.publish(completed);
        expect(seqs(await drain(sub))).toEqual([1, 2, 3]);
      }));

    it(
      "no gap and no duplicate for many subscribers joining at random moments while a run publishes thousands of events unawaited",
      () =>
        withPair({}, async ({ a, b }) => {
          const seed = Number(process.env.EVENT_BUS_SEED ?? Date.now() % 1_000_000);
          // EVENT_BUS_SEED=<seed> replays a failing interleaving's choices.
          onTestFailed(() => console.error(`event bus interleaving: seed ${seed}`));
          const next = random(seed);
          const { runId, conversationId } = ids();
          const run = a.openRun(runId, conversationId);
          const total = 3000;
          // 40 subscribers join at random points of the run (several at once, at times).
          const joinAt = Array.from({ length: 40 }, () => 1 + Math.floor(next() * (total - 2))).sort((x, y) => x - y);
          const followers: { after: number; on: string; events: Promise<RunEvent[]> }[] = [];
          run.publish(running);
          let published = 1;
          // From here on the log exists for every instance (before it, B may answer null).
          await run.flushed();
          while (published < total - 1) {
            // A burst of publishes in one go, then a turn of the event loop in which
            // replies, deliveries and new subscribers interleave with them.
            const burst = 1 + Math.floor(next() * 60);
            for (let i = 0; i < burst && published < total - 1; i++) {
              run.publish(token(`t${published + 1}`));
              published += 1;
            }
            while (joinAt.length && joinAt[0]! <= published) {
              joinAt.shift();
              const pick = next();
              const after = pick < 0.25 ? 0 : pick < 0.5 ? Math.floor(next() * published) : pick < 0.8 ? published : published + 1 + Math.floor(next() * 20);
              const on = next() < 0.5 ? "a" : "b";
              const bus = on === "a" ? a : b;
              followers.push({ after, on, events: bus.subscribeRun(runId, after).then((sub) => drain(sub!, `subscriber after ${after} on ${on}`, 20_000)) });
            }
            await turn();
          }
          const last = run.publish(completed);
          expect(last.seq).toBe(total);
          await within(run.flushed(), "flushed");
          expect(followers.length).toBe(40);
          for (const { after, on, events } of followers) {
            const got = seqs(await events);
            const want = range(after + 1, total);
            if (got.length !== want.length || got.some((s, i) => s !== want[i])) {
              throw new Error(
                `seed ${seed}: subscriber after ${after} on ${on} got ${got.length} events, first ${got.slice(0, 5)}, expected ${want.length} from ${after + 1}`,
              );
            }
          }
          expect(a.stats().runSubscribers + b.stats().runSubscribers).toBe(0);
        }),
      30_000,
    );

    it("reports events no longer retained as one replayGap event, then the rest", () =>
      withPair({ retention: 5 }, async ({ a, b }) => {
        const { runId, conversationId } = ids();
        const run = a.openRun(runId, conversationId);
        run.publish(running);
        for (let i = 2; i <= 12; i++) run.publish(token(`t${i}`));
        await run.flushed();
        // Seqs 8..12 are retained.
        const from0 = (await b.subscribeRun(runId, 0))!;
        const from3 = (await a.subscribeRun(runId, 3))!;
        const from6 = (await b.subscribeRun(runId, 6))!;
        const from7 = (await b.subscribeRun(runId, 7))!;
        const from10 = (await b.subscribeRun(runId, 10))!;
        const all = Promise.all([drain(from0), drain(from3), drain(from6), drain(from7), drain(from10)]);
        run.publish(completed);
        const [got0, got3, got6, got7, got10] = await all;
        expect(got0[0]).toEqual({ type: "replayGap", fromSeq: 1, toSeq: 7, seq: 7, runId, conversationId, at: expect.any(Date) });
        expect(seqs(got0.slice(1))).toEqual(range(8, 13));
        expect(got3[0]).toMatchObject({ type: "replayGap", fromSeq: 4, toSeq: 7, seq: 7 });
        expect(seqs(got3.slice(1))).toEqual(range(8, 13));
        expect(got6[0]).toMatchObject({ type: "replayGap", fromSeq: 7, toSeq: 7, seq: 7 });
        expect(seqs(got6.slice(1))).toEqual(range(8, 13));
        expect(got7.map((e) => e.type)).not.toContain("replayGap");
        expect(seqs(got7)).toEqual(range(8, 13));
        expect(seqs(got10)).toEqual([11, 12, 13]);
        // A subscriber after the run finished: the same retained five, after the same gap.
        const late = await drain((await b.subscribeRun(runId, 0))!);
        expect(late.map((e) => (e.type === "replayGap" ? `gap ${e.fromSeq}-${e.toSeq}` : e.seq))).toEqual(["gap 1-8", 9, 10, 11, 12, 13]);
      }));

    it("the terminal event ends every run subscriber; later subscribers get the retained events, then done", () =>
      withPair({}, async ({ a, b }) => {
        const { runId, conversationId } = ids();
        const run = a.openRun(runId, conversationId);
        run.publish(running);
        await run.flushed();
        const subs = [(await a.subscribeRun(runId))!, (await b.subscribeRun(runId))!, (await b.subscribeRun(runId, 1))!, (await b.subscribeRun(runId, 3))!];
        const waiting = subs[3]!.next(); // parked: nothing after 3 yet
        const results = subs.slice(0, 3).map((sub) => drain(sub));
        run.publish(token("hi"));
        const last = run.publish(completed);
        expect(seqs(await results[0]!)).toEqual([1, 2, 3]);
        expect(seqs(await results[1]!)).toEqual([1, 2, 3]);
        expect(seqs(await results[2]!)).toEqual([2, 3]);
        expect(await within(waiting, "the parked subscriber to end")).toEqual({ value: undefined, done: true });
        expect(() => run.publish(token("late"))).toThrow();
        expect(() => a.openRun(runId, conversationId)).toThrow();
        await run.flushed();
        for (const bus of [a, b]) {
          expect(seqs(await drain((await bus.subscribeRun(runId))!))).toEqual([1, 2, 3]);
          expect(await drain((await bus.subscribeRun(runId, 1))!)).toEqual([expect.objectContaining({ seq: 2 }), last]);
          expect(await drain((await bus.subscribeRun(runId, 3))!)).toEqual([]);
          expect(bus.stats().runSubscribers).toBe(0);
        }
      }));

    it("ends an abandoned run's log with a terminal event after its last, for subscribers on every instance", () =>
      withPair({}, async ({ a, b }) => {
        const { runId, conversationId } = ids();
        const run = a.openRun(runId, conversationId);
        run.publish(running);
        run.publish(token("half"));
        await run.flushed();
        const onA = (await a.subscribeRun(runId))!;
        const onB = (await b.subscribeRun(runId, 1))!;
        const interrupted: RunEventBody = {
          type: "status",
          status: "interrupted",
          errorCode: "INTERRUPTED",
          errorMessage: "the process running this run stopped",
        };
        // The instance that executed the run is gone: another one ends its log.
        const ended = await b.endAbandonedRun(runId, conversationId, interrupted);
        expect(ended).toMatchObject({ ...interrupted, seq: 3, runId, conversationId });
        expect(seqs(await drain(onA))).toEqual([1, 2, 3]);
        expect(await drain(onB)).toEqual([expect.objectContaining({ seq: 2 }), ended]);
        expect(await b.endAbandonedRun(runId, conversationId, interrupted)).toBeNull();
        expect(await a.endAbandonedRun(ids().runId, conversationId, interrupted)).toBeNull();
      }));

    it("answers null for a run no instance opened, and for one finished longer than the grace period ago", () =>
      withPair({ graceMs: 300 }, async ({ a, b }) => {
        expect(await a.subscribeRun(randomUUID())).toBeNull();
        expect(await b.subscribeRun(randomUUID(), 5)).toBeNull();
        const { runId, conversationId } = ids();
        const run = a.openRun(runId, conversationId);
        run.publish(running);
        expect(a.stats().logs).toBe(1);
        const finishing = performance.now();
        run.publish(completed);
        await run.flushed();
        // Within the grace period the log answers, on both instances.
        for (const bus of [a, b]) expect(seqs(await drain((await bus.subscribeRun(runId))!))).toEqual([1, 2]);
        let goneAfter = 0;
        for (const bus of [a, b]) {
          await until(async () => {
            const sub = await bus.subscribeRun(runId);
            if (sub) await sub.return!();
            return sub === null;
          }, "the log to go");
          goneAfter ||= performance.now() - finishing;
        }
        expect(goneAfter).toBeGreaterThanOrEqual(300 - 5);
        await until(() => a.stats().logs === 0, "A to drop the log");
      }));

    it("cuts off a subscriber that stops reading at the queue limit, while others and the publisher carry on", () =>
      withPair({ subscriberQueueLimit: 10 }, async ({ a, b }) => {
        const { runId, conversationId } = ids();
        const run = a.openRun(runId, conversationId);
        await run.flushed();
        const stalled = (await b.subscribeRun(runId))!;
        // A subscriber on the same instance that reads: when it has seq n, the
        // stalled one has been handed seq n too.
        const reader = (await b.subscribeRun(runId))!;
        let maxPending = 0;
        const read = within(
          (async () => {
            const got: number[] = [];
            for await (const event of reader) {
              got.push(event.seq);
              maxPending = Math.max(maxPending, stalled.pending);
            }
            return got;
          })(),
          "the reading subscriber",
        );
        // Bursts of half the limit, so the reading subscriber can keep up.
        for (let i = 1; i <= 50; i++) {
          run.publish(token(`t${i}`));
          if (i % 5 === 0) await turn();
        }
        run.publish(completed);
        expect(await read).toEqual(range(1, 51));
        expect(maxPending).toBeLessThanOrEqual(10);
        expect(stalled.closed).toBe(true);
        expect(stalled.pending).toBe(0);
        const error = await stalled.next().catch((e: unknown) => e);
        expect(error).toBeInstanceOf(SubscriberOverflowError);
        expect(error).toMatchObject({ code: "SUBSCRIBER_TOO_SLOW" });
        await within(run.flushed(), "the publisher's writes");
        expect(b.stats().runSubscribers).toBe(0);
      }));

    it("does not count a replay against the queue limit, only what falls behind live", () =>
      withPair({ subscriberQueueLimit: 10 }, async ({ a, b }) => {
        const { runId, conversationId } = ids();
        const run = a.openRun(runId, conversationId);
        for (let i = 1; i <= 30; i++) run.publish(token(`r${i}`));
        await run.flushed();
        const late = (await b.subscribeRun(runId))!;
        const witness = (await b.subscribeRun(runId, 30))!;
        expect(late.closed).toBe(false);
        for (let i = 1; i <= 10; i++) run.publish(token(`live${i}`));
        expect(seqs(await take(witness, 10))).toEqual(range(31, 40));
        expect(late.closed).toBe(false);
        expect(late.pending).toBe(40);
        run.publish(token("one too many"));
        expect(seqs(await take(witness, 1))).toEqual([41]);
        expect(late.closed).toBe(true);
        await expect(late.next()).rejects.toBeInstanceOf(SubscriberOverflowError);
        await witness.return!();
        expect(b.stats().runSubscribers).toBe(0);
      }));

    it("return() releases a subscriber at once, also while it waits for an event", () =>
      withPair({}, async ({ a, b }) => {
        const { runId, conversationId } = ids();
        const run = a.openRun(runId, conversationId);
        run.publish(running);
        await run.flushed();
        const runSub = (await b.subscribeRun(runId))!;
        const conversationSub = await b.subscribeConversation(conversationId);
        const changeSub = await b.subscribeConversationChanges();
        expect(b.stats()).toMatchObject({ runSubscribers: 1, conversationSubscribers: 1, changeSubscribers: 1 });
        expect((await take(runSub, 1))[0]).toMatchObject({ seq: 1 });
        const parked = [runSub.next(), conversationSub.next(), changeSub.next()];
        await Promise.all([runSub.return!(), conversationSub.return!(), changeSub.return!()]);
        expect(b.stats()).toMatchObject({ runSubscribers: 0, conversationSubscribers: 0, changeSubscribers: 0 });
        for (const next of parked) expect(await within(next as Promise<unknown>, "a parked next()")).toEqual({ value: undefined, done: true });
        // With unread events queued, too.
        const queued = (await b.subscribeRun(runId))!;
        run.publish(token("unread"));
        await run.flushed();
        const witness = (await b.subscribeRun(runId, 1))!;
        await take(witness, 1);
        expect(queued.pending).toBe(2);
        await queued.return!();
        await witness.return!();
        expect(b.stats().runSubscribers).toBe(0);
        // The instance still serves the run to new subscribers.
        const again = (await b.subscribeRun(runId, 2))!;
        run.publish(completed);
        expect(seqs(await drain(again))).toEqual([3]);
      }));

    it("conversationEvents: every event of every run of one conversation, live, and none of another conversation", () =>
      withPair({}, async ({ a, b }) => {
        const conversationId = randomUUID();
        const other = randomUUID();
        const first = a.openRun(randomUUID(), conversationId);
        first.publish(running);
        first.publish(token("before anyone listened"));
        await first.flushed();
        const onB = await b.subscribeConversation(conversationId);
        const onA = await a.subscribeConversation(conversationId);
        const published: RunEvent[] = [];
        published.push(first.publish(token("after")));
        const elsewhere = a.openRun(randomUUID(), other);
        elsewhere.publish(running);
        elsewhere.publish(token("not for us"));
        published.push(first.publish(completed));
        const second = a.openRun(randomUUID(), conversationId);
        published.push(second.publish(running), second.publish(token("second run")));
        elsewhere.publish(completed);
        published.push(second.publish(completed));
        for (const sub of [onB, onA]) {
          const got = await take(sub, published.length, "the conversation's events");
          expect(got).toEqual(published);
          // A conversation subscription outlives its runs.
          expect(sub.closed).toBe(false);
        }
        const third = a.openRun(randomUUID(), conversationId);
        const later = third.publish(running);
        expect(await take(onB, 1)).toEqual([later]);
        await onB.return!();
        await onA.return!();
        expect(a.stats().conversationSubscribers + b.stats().conversationSubscribers).toBe(0);
      }));

    it("conversationEvents: an event published just after subscribeConversation returns is delivered", () =>
      withPair({}, async ({ a, b }) => {
        // Many at once, so a subscription that is not yet in force when
        // subscribeConversation returns has a chance to show.
        const conversations = Array.from({ length: 50 }, () => randomUUID());
        const subs = await Promise.all(conversations.map((id) => b.subscribeConversation(id)));
        const published = conversations.map((id) => a.openRun(randomUUID(), id).publish(running));
        for (const [i, sub] of subs.entries()) expect(await take(sub, 1, `conversation ${i}'s event`)).toEqual([published[i]]);
        await Promise.all(subs.map((sub) => sub.return!()));
        expect(b.stats().conversationSubscribers).toBe(0);
      }));

    it("conversation changes reach the subscribers of every instance, in order", () =>
      withPair({}, async ({ a, b }) => {
        const onA = await a.subscribeConversationChanges();
        const onB = await b.subscribeConversationChanges();
        const conversationId = randomUUID();
        const at = new Date("2026-12-01T10:00:00.123Z");
        const changes: ConversationChange[] = [
          { kind: "created", conversationId, at },
          { kind: "updated", conversationId, at: new Date(at.getTime() + 1) },
          {
            kind: "deleted",
            conversationId,
            at: new Date(at.getTime() + 2),
            snapshot: {
              id: conversationId,
              title: "Hello",
              owner: "alice",
              createdAt: at,
              updatedAt: new Date(at.getTime() + 1),
              messageCount: 4,
              agent: "planner",
              forkedFromConversationId: null,
              forkedFromCheckpointId: null,
            },
          },
        ];
        await a.publishConversationChange(changes[0]!);
        await b.publishConversationChange(changes[1]!);
        await a.publishConversationChange(changes[2]!);
        for (const sub of [onA, onB]) expect(await take(sub, 3, "the changes")).toEqual(changes);
        await onA.return!();
        await onB.return!();
      }));

    it("conversation changes reach the listeners of every instance, which no subscriber count includes", () =>
      withPair({}, async ({ a, b }) => {
        const heard: Record<string, string[]> = { a: [], b1: [], b2: [] };
        let arrived = () => {};
        const listen = (bus: EventBus, name: string) =>
          bus.onConversationChange((change) => {
            heard[name]!.push(change.conversationId);
            arrived();
          });
        const heardAll = (expected: Record<string, string[]>) =>
          within(
            new Promise<void>((resolve) => {
              arrived = () => JSON.stringify(heard) === JSON.stringify(expected) && resolve();
              arrived();
            }),
            "the listeners to hear the changes",
          );
        listen(a, "a");
        const stopB1 = listen(b, "b1");
        listen(b, "b2");
        expect(b.stats().changeSubscribers).toBe(0);
        await a.publishConversationChange({ kind: "created", conversationId: "c1", at: new Date() });
        await heardAll({ a: ["c1"], b1: ["c1"], b2: ["c1"] });
        stopB1();
        await b.publishConversationChange({ kind: "updated", conversationId: "c2", at: new Date() });
        await heardAll({ a: ["c1", "c2"], b1: ["c1"], b2: ["c1", "c2"] });
      }));

    it("cancel requests reach the listeners of every instance", () =>
      withPair({}, async ({ a, b }) => {
        const heard: Record<string, string[]> = { a1: [], a2: [], b1: [] };
        const arrivals: Record<string, (() => void) | undefined> = {};
        const listen = (bus: EventBus, name: string) =>
          bus.onCancelRequest((runId) => {
            heard[name]!.push(runId);
            arrivals[name]?.();
          });
        const heardBy = (name: string, count: number) =>
          within(
            new Promise<void>((resolve) => {
              const check = () => heard[name]!.length >= count && resolve();
              arrivals[name] = check;
              check();
            }),
            `${name} to hear ${count} requests`,
          );
        const stopA1 = listen(a, "a1");
        listen(a, "a2");
        listen(b, "b1");
        await b.requestCancel("run-1");
        await Promise.all([heardBy("a1", 1), heardBy("a2", 1), heardBy("b1", 1)]);
        stopA1();
        await a.requestCancel("run-2");
        await Promise.all([heardBy("a2", 2), heardBy("b1", 2)]);
        expect(heard).toEqual({ a1: ["run-1"], a2: ["run-1", "run-2"], b1: ["run-1", "run-2"] });
      }));

    it("flushed(): once it resolves, every event published so far can be read on any instance", () =>
      withPair({}, async ({ a, b }) => {
        const { runId, conversationId } = ids();
        const run = a.openRun(runId, conversationId);
        for (let i = 1; i <= 200; i++) run.publish(token(`t${i}`));
        await within(run.flushed(), "flushed");
        // Already queued when subscribeRun resolves: no further wait.
        const sub = (await b.subscribeRun(runId))!;
        expect(sub.pending).toBe(200);
        run.publish(completed);
        expect(seqs(await drain(sub))).toEqual(range(1, 201));
        await within(run.flushed(), "flushed again");
        await within(run.flushed(), "flushed with nothing new");
      }));

    it("close() ends the instance's subscribers and refuses new ones", () =>
      withPair({}, async ({ a, b }) => {
        const { runId, conversationId } = ids();
        const run = a.openRun(runId, conversationId);
        run.publish(running);
        await run.flushed();
        const runSub = (await b.subscribeRun(runId))!;
        await take(runSub, 1);
        const parked = runSub.next();
        const conversationSub = await b.subscribeConversation(conversationId);
        const changeSub = await b.subscribeConversationChanges();
        await within(b.close(), "close()");
        expect(await within(parked, "the parked run subscriber")).toEqual({ value: undefined, done: true });
        expect(await drain(conversationSub)).toEqual([]);
        expect(await drain(changeSub)).toEqual([]);
        expect(b.stats()).toEqual({ runSubscribers: 0, conversationSubscribers: 0, changeSubscribers: 0, logs: 0 });
        await expect(b.subscribeRun(runId)).rejects.toThrow(/closed/);
        await within(b.close(), "a second close()");
        if (a !== b) {
          // The other instance carries on.
          const onA = (await a.subscribeRun(runId))!;
          run.publish(completed);
          expect(seqs(await drain(onA))).toEqual([1, 2]);
        }
      }));
  });
}
