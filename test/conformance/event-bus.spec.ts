// Every event bus backend against the one conformance suite.
import { randomUUID } from "node:crypto";
import { MessageChannel } from "node:worker_threads";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import type { RunEvent, RunEventBody } from "../../src/domain/events.ts";
import { describeEventBusConformance } from "./event-bus.ts";
import { MemoryEventBus } from "../../src/storage/event-bus/memory.ts";
import { connectRedisEventBus } from "../../src/storage/event-bus/redis.ts";
import { ClusterEventBus } from "../../src/storage/event-bus/cluster.ts";
import { ClusterRelay } from "../../src/storage/event-bus/cluster-relay.ts";
import { messagePortBus } from "../../src/storage/event-bus/cluster-protocol.ts";
import { redisServer } from "../../testkit/services.ts";

describeEventBusConformance("MemoryEventBus", async (options) => {
  const bus = new MemoryEventBus(options);
  return { a: bus, b: bus, close: () => bus.close() };
});

// Two workers of a cluster and the primary's relay, with MessageChannels in
// place of the IPC channels (the same structured clone as node's cluster with
// advanced serialization); test/cluster.spec.ts runs it between real processes.
describeEventBusConformance("ClusterEventBus, two workers through the relay", async (options) => {
  const relay = new ClusterRelay();
  const channels = [new MessageChannel(), new MessageChannel()];
  const [a, b] = channels.map(({ port1, port2 }) => {
    relay.attach(messagePortBus(port2));
    return new ClusterEventBus(messagePortBus(port1), options);
  });
  // Answered after each bus's hello: from here on the relay asks both.
  await Promise.all([a!.ping(), b!.ping()]);
  return {
    a: a!,
    b: b!,
    close: async () => {
      await Promise.all([a!.close(), b!.close()]);
      relay.close();
      for (const { port1, port2 } of channels) {
        port1.close();
        port2.close();
      }
    },
  };
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

// What only a cluster has: workers that come and go under one relay.
describe("ClusterEventBus: workers coming and going", () => {
  const options = { retention: 100, graceMs: 60_000, subscriberQueueLimit: 100 };
  const running: RunEventBody = { type: "status", status: "running", errorCode: null, errorMessage: null };
  const token: RunEventBody = { type: "token", text: "t", messageId: "m1", node: "agent" };

  function cluster() {
    const relay = new ClusterRelay();
    const channels: MessageChannel[] = [];
    const buses: ClusterEventBus[] = [];
    const join = async () => {
      const channel = new MessageChannel();
      channels.push(channel);
      const id = relay.attach(messagePortBus(channel.port2));
      const bus = new ClusterEventBus(messagePortBus(channel.port1), options);
      buses.push(bus);
      await bus.ping();
      return { bus, id };
    };
    const close = async () => {
      await Promise.all(buses.map((bus) => bus.close()));
      relay.close();
      for (const { port1, port2 } of channels) {
        port1.close();
        port2.close();
      }
    };
    return { relay, join, close };
  }

  it("a worker that goes takes its runs' logs: their followers on other workers fail with RUN_LOG_LOST, and a new subscriber gets null", async () => {
    const { relay, join, close } = cluster();
    try {
      const a = await join();
      const b = await join();
      const runId = randomUUID();
      const run = a.bus.openRun(runId, randomUUID());
      run.publish(running);
      run.publish(token);
      const sub = (await b.bus.subscribeRun(runId))!;
      expect((await sub.next()).value).toMatchObject({ seq: 1 });
      expect((await sub.next()).value).toMatchObject({ seq: 2 });
      // The worker's process exits: the primary detaches it.
      relay.detach(a.id);
      await expect(sub.next()).rejects.toMatchObject({ code: "RUN_LOG_LOST" });
      expect(await b.bus.subscribeRun(runId)).toBeNull();
      expect(b.bus.stats().runSubscribers).toBe(0);
    } finally {
      await close();
    }
  });

  it("a worker that starts later is told what the others watch, before it publishes", async () => {
    const { join, close } = cluster();
    try {
      const a = await join();
      const conversationId = randomUUID();
      const watching = await a.bus.subscribeConversation(conversationId);
      const later = await join();
      const event = later.bus.openRun(randomUUID(), conversationId).publish(running);
      expect((await watching.next()).value).toEqual(event);
      await watching.return!();
    } finally {
      await close();
    }
  });

  it("ping() fails when no primary answers", async () => {
    const { port1, port2 } = new MessageChannel();
    const bus = new ClusterEventBus(messagePortBus(port1), { ...options, pingTimeoutMs: 100 });
    try {
      await expect(bus.ping()).rejects.toThrow(/did not answer within 100 ms/);
    } finally {
      await bus.close();
      port1.close();
      port2.close();
    }
  });
});
