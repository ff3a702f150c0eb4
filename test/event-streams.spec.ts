// The streams subscriptions are built on (src/read/event-streams.ts), over the
// memory bus, without a server: unsubscribing takes effect at once, a cut-off
// becomes one last item, and a run is followed from the store until its log
// appears. The bus itself is held by test/conformance/event-bus.ts.
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
    const stream = mapStream(
      await b.subscribeConversation("c"),
      (e: RunEvent) => e.seq,
      (error) => (error instanceof SubscriberOverflowError ? -1 : undefined),
    );
    const b_r = b.openRun("r", "c");
    b_r.publish(status("running"));
    b_r.publish(token("overflows"));
    expect(await stream.next()).toEqual({ value: -1, done: false });
    expect(await stream.next()).toEqual({ value: undefined, done: true });
  });

  it("followRun: answers a finished run from the store with its terminal event alone", async () => {
    const stored: StoredRun = {
      conversationId: "c",
      status: "failed",
      errorCode: "MODEL_ERROR",
      errorMessage: "boom",
      finishedAt: new Date(),
      lastEventSeq: 9,
    };
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
