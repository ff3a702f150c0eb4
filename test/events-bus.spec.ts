// The in-memory event bus and the streams built on it, without a server:
// replay + live without gap or duplicate, the `after` filter, bounded queues,
// and unsubscribing that takes effect at once.
import { describe, expect, it } from "vitest";
import { MemoryEventBus } from "../src/storage/event-bus/memory.ts";
import { SubscriberOverflowError } from "../src/storage/event-bus/subscriber.ts";
import { followRun, mapStream, type StoredRun } from "../src/read/event-streams.ts";
import type { RunEvent, RunEventBody } from "../src/domain/events.ts";

const token = (text: string): RunEventBody => ({ type: "token", text, messageId: "m", node: "agent" });
const status = (value: "running" | "completed"): RunEventBody => ({ type: "status", status: value, errorCode: null, errorMessage: null });

function bus(options: Partial<{ retention: number; graceMs: number; subscriberQueueLimit: number }> = {}) {
  return new MemoryEventBus({ retention: 1000, graceMs: 60_000, subscriberQueueLimit: 1000, ...options });
}

async function drain(stream: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const out: RunEvent[] = [];
  for await (const event of stream) out.push(event);
  return out;
}

const tick = () => new Promise((r) => setImmediate(r));

describe("MemoryEventBus", () => {
  it("gives every subscriber exactly the events after its seq, however publishing and subscribing interleave", async () => {
    const b = bus();
    const b_r = b.openRun("r", "c");
    b_r.publish(status("running"));
    const streams: { after: number; events: Promise<RunEvent[]> }[] = [];
    const total = 300;
    for (let i = 1; i <= total; i++) {
      b_r.publish(token(`t${i}`));
      // Subscribers join between publishes, asking for the start, the present and the future.
      if (i % 7 === 0) for (const after of [0, Math.max(0, i - 3), i + 1, i + 5]) streams.push({ after, events: drain((await b.subscribeRun("r", after))!) });
      if (i % 3 === 0) await tick();
    }
    const last = b_r.publish(status("completed"));
    expect(last.seq).toBe(total + 2);
    for (const { after, events } of streams) {
      const seqs = (await events).map((e) => e.seq);
      expect(seqs).toEqual(Array.from({ length: last.seq - after }, (_, k) => after + 1 + k));
    }
    expect(b.stats().runSubscribers).toBe(0);
  });

  it("does not count the replay against the queue limit, but cuts off a subscriber that falls behind live", async () => {
    const b = bus({ subscriberQueueLimit: 3 });
    const b_r = b.openRun("r", "c");
    for (let i = 0; i < 10; i++) b_r.publish(token(`t${i}`));
    const sub = (await b.subscribeRun("r", 0))!;
    expect(sub.pending).toBe(10);
    for (let i = 0; i < 3; i++) b_r.publish(token(`live${i}`));
    expect(sub.closed).toBe(false);
    b_r.publish(token("one too many"));
    expect(sub.closed).toBe(true);
    expect(b.stats().runSubscribers).toBe(0);
    await expect(sub.next()).rejects.toBeInstanceOf(SubscriberOverflowError);
  });

  it("reports what it no longer retains as a ReplayGapEvent", async () => {
    const b = bus({ retention: 4 });
    const b_r = b.openRun("r", "c");
    for (let i = 0; i < 10; i++) b_r.publish(token(`t${i}`));
    b_r.publish(status("completed"));
    const events = await drain((await b.subscribeRun("r", 2))!);
    expect(events[0]).toMatchObject({ type: "replayGap", fromSeq: 3, toSeq: 7, seq: 7 });
    expect(events.slice(1).map((e) => e.seq)).toEqual([8, 9, 10, 11]);
  });

  it("drops a finished run's log after the grace period", async () => {
    const b = bus({ graceMs: 20 });
    const b_r = b.openRun("r", "c");
    b_r.publish(status("running"));
    b_r.publish(status("completed"));
    expect(await b.subscribeRun("r", 0)).not.toBeNull();
    await new Promise((r) => setTimeout(r, 60));
    expect(await b.subscribeRun("r", 0)).toBeNull();
    expect(b.stats().logs).toBe(0);
  });
});

describe("streams", () => {
  it("mapStream: return() while a next() waits ends both at once and releases the bus listener", async () => {
    const b = bus();
    const stream = mapStream(await b.subscribeConversation("c"), (e) => e);
    const pending = stream.next();
    expect(b.stats().conversationSubscribers).toBe(1);
    await stream.return!();
    expect(await pending).toEqual({ value: undefined, done: true });
    expect(b.stats().conversationSubscribers).toBe(0);
  });

  it("mapStream: turns a source failure into one last item when asked to", async () => {
    const b = bus({ subscriberQueueLimit: 1 });
    const stream = mapStream(await b.subscribeConversation("c"), (e: RunEvent) => e.seq, (error) => (error instanceof SubscriberOverflowError ? -1 : undefined));
    const b_r = b.openRun("r", "c");
    b_r.publish(status("running"));
    b_r.publish(token("overflows"));
    expect(await stream.next()).toEqual({ value: -1, done: false });
    expect(await stream.next()).toEqual({ value: undefined, done: true });
  });

  it("followRun: answers a finished run from the store with its terminal event alone", async () => {
    const stored: StoredRun = { conversationId: "c", status: "failed", errorCode: "MODEL_ERROR", errorMessage: "boom", finishedAt: new Date(), lastEventSeq: 9 };
    const events = await drain(followRun(bus(), "r", 0, { lookup: async () => stored, pollMs: 10 }));
    expect(events).toEqual([
      { type: "status", status: "failed", errorCode: "MODEL_ERROR", errorMessage: "boom", seq: 9, runId: "r", conversationId: "c", at: stored.finishedAt },
    ]);
    expect(await drain(followRun(bus(), "r", 9, { lookup: async () => stored, pollMs: 10 }))).toEqual([]);
  });

  it("followRun: waits on the store for a run executed elsewhere, and can be returned while it waits", async () => {
    let row: StoredRun = { conversationId: "c", status: "running", errorCode: null, errorMessage: null, finishedAt: null, lastEventSeq: 0 };
    const lookups: number[] = [];
    const lookup = async () => {
      lookups.push(Date.now());
      return row;
    };
    const waiting = followRun(bus(), "r", 0, { lookup, pollMs: 10 });
    const first = waiting.next();
    await new Promise((r) => setTimeout(r, 50));
    expect(lookups.length).toBeGreaterThan(1);
    row = { ...row, status: "completed", finishedAt: new Date(), lastEventSeq: 4 };
    expect(await first).toMatchObject({ done: false, value: { type: "status", status: "completed", seq: 4 } });

    const returned = followRun(bus(), "r", 0, { lookup: async () => ({ ...row, status: "running" }), pollMs: 60_000 });
    const parked = returned.next();
    await tick();
    await returned.return!();
    expect(await parked).toEqual({ value: undefined, done: true });
  });

  it("followRun: switches to the bus when the run's log opens while it polls", async () => {
    const b = bus();
    const row: StoredRun = { conversationId: "c", status: "running", errorCode: null, errorMessage: null, finishedAt: null, lastEventSeq: 0 };
    const stream = followRun(b, "r", 0, { lookup: async () => row, pollMs: 5 });
    const events = drain(stream);
    await new Promise((r) => setTimeout(r, 20));
    const b_r = b.openRun("r", "c");
    b_r.publish(status("running"));
    b_r.publish(token("hi"));
    b_r.publish(status("completed"));
    expect((await events).map((e) => e.seq)).toEqual([1, 2, 3]);
  });
});
