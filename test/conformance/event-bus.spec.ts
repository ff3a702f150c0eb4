// Both event bus backends against the one conformance suite.
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
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
