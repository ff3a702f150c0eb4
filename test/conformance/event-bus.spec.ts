// Both event bus backends against the one conformance suite.
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import type { RunEvent, RunEventBody } from "../../src/domain/events.ts";
import { describeEventBusConformance } from "./event-bus.ts";
import { MemoryEventBus } from "../../src/storage/event-bus/memory.ts";
import { connectRedisEventBus } from "../../src/storage/event-bus/redis.ts";
import { redisServer } from "../../testkit/services.ts";

describeEventBusConformance("MemoryEventBus", async (options) => {
  const bus = new MemoryEventBus(options);
  return { a: bus, b: bus, close: () => bus.close() };
});

describeEventBusConformance("RedisEventBus, two instances", async (options) => {
  const { url } = await redisServer();
  // The Redis is shared by the whole test run: this pair's keys are its own.
  const keyPrefix = `runledger-test:${randomUUID()}:`;
  const a = await connectRedisEventBus(url, { ...options, keyPrefix });
  const b = await connectRedisEventBus(url, { ...options, keyPrefix });
  return {
    a,
    b,
    close: async () => {
      await Promise.all([a.close(), b.close()]);
      await deleteKeys(url, keyPrefix);
    },
  };
});

async function deleteKeys(url: string, prefix: string) {
  const redis = new Redis(url);
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}

// EVENT_GRACE_RUNS bounds what finished runs keep in this process's memory; a
// backend that keeps logs elsewhere (Redis) has no such bound to hold.
describe("MemoryEventBus: at most graceRuns finished logs", () => {
  const status = (value: "running" | "completed"): RunEventBody => ({ type: "status", status: value, errorCode: null, errorMessage: null });
  const token: RunEventBody = { type: "token", text: "t", messageId: "m1", node: "agent" };
  const finish = (bus: MemoryEventBus) => {
    const runId = randomUUID();
    const run = bus.openRun(runId, randomUUID());
    for (const body of [status("running"), token, status("completed")]) run.publish(body);
    return runId;
  };

  it("ends the oldest finished run's grace early, and only a finished one's no subscriber still reads", async () => {
    const bus = new MemoryEventBus({ retention: 100, graceMs: 60_000, graceRuns: 2, subscriberQueueLimit: 100 });
    /** Whether the run's log still answers a new subscriber (released at once). */
    const replayable = async (runId: string) => {
      const sub = await bus.subscribeRun(runId);
      await sub?.return?.();
      return sub !== null;
    };
    try {
      const open = randomUUID();
      bus.openRun(open, randomUUID()).publish(status("running"));
      const first = randomUUID();
      const run = bus.openRun(first, randomUUID());
      run.publish(status("running"));
      const attached = (await bus.subscribeRun(first))!;
      run.publish(token);
      run.publish(status("completed"));
      const second = finish(bus);
      expect(await replayable(first)).toBe(true);
      const third = finish(bus);
      // Three finished, two to keep, but the oldest is still read: it stays, the next oldest gives way, and its subscriber reads it all.
      expect(await replayable(second)).toBe(false);
      expect(bus.stats()).toMatchObject({ runSubscribers: 1, logs: 3 });
      const held: RunEvent[] = [];
      for (let r = await attached.next(); !r.done; r = await attached.next()) held.push(r.value);
      expect(held.map((e) => e.seq)).toEqual([1, 2, 3]);
      // Read: the next run to finish ends its grace, as EVENT_GRACE_MS would; later subscribers get null.
      const fourth = finish(bus);
      expect(await replayable(first)).toBe(false);
      for (const kept of [third, fourth]) {
        const sub = (await bus.subscribeRun(kept))!;
        const events: RunEvent[] = [];
        for (let r = await sub.next(); !r.done; r = await sub.next()) events.push(r.value);
        expect(events.map((e) => e.seq)).toEqual([1, 2, 3]);
      }
      // However many finish, a run still open keeps its log.
      for (let i = 0; i < 5; i++) finish(bus);
      const live = (await bus.subscribeRun(open))!;
      expect(live).not.toBeNull();
      await live.return?.();
      expect(bus.stats().logs).toBe(3);
    } finally {
      await bus.close();
    }
  });

  it("keeps every finished log for the grace period without a bound", async () => {
    const bus = new MemoryEventBus({ retention: 100, graceMs: 60_000, subscriberQueueLimit: 100 });
    try {
      const runs = Array.from({ length: 50 }, () => finish(bus));
      expect(bus.stats().logs).toBe(50);
      const sub = (await bus.subscribeRun(runs[0]!))!;
      expect(sub).not.toBeNull();
      await sub.return?.();
    } finally {
      await bus.close();
    }
  });
});
