// What the Redis event bus must do beyond the conformance suite: start-up
// errors that name REDIS_URL, few connections whatever the subscribers, a
// process that can exit after close(), logs that expire, and subscribers of a
// log that vanished.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import net from "node:net";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectRedisEventBus, RunLogLostError, type RedisEventBusOptions } from "../src/storage/event-bus/redis.ts";
import type { RunEventBody } from "../src/domain/events.ts";
import { redisServer } from "../testkit/services.ts";
import { ROOT } from "../testkit/app.ts";

const running: RunEventBody = { type: "status", status: "running", errorCode: null, errorMessage: null };
const completed: RunEventBody = { type: "status", status: "completed", errorCode: null, errorMessage: null };
const token = (text: string): RunEventBody => ({ type: "token", text, messageId: null, node: "agent" });

let url: string;
let admin: Redis;
beforeAll(async () => {
  ({ url } = await redisServer());
  admin = new Redis(url);
});
afterAll(() => admin.disconnect());

function options(overrides: Partial<RedisEventBusOptions> = {}): RedisEventBusOptions {
  return { retention: 1000, graceMs: 60_000, subscriberQueueLimit: 1000, keyPrefix: `runledger-test:${randomUUID()}:`, ...overrides };
}

/** The connections Redis sees for the instances on one key prefix, by name (other spec files share the server). */
async function busClients(keyPrefix: string): Promise<string[]> {
  const list = (await admin.client("LIST")) as string;
  return list
    .split("\n")
    .map((line) => /name=(\S*)/.exec(line)?.[1] ?? "")
    .filter((name) => name.startsWith(keyPrefix))
    .map((name) => name.slice(keyPrefix.length))
    .sort();
}

/** Rejects when `promise` has not settled within `ms`: a hang fails with a name instead of the test timeout. */
function within<T>(promise: Promise<T>, what: string, ms = 10_000): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms))),
  ]);
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

describe("connectRedisEventBus", () => {
  it("refuses a malformed URL with a message naming REDIS_URL", async () => {
    await expect(connectRedisEventBus("localhost:6379", options())).rejects.toThrow(/^REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL/);
    await expect(connectRedisEventBus("http://127.0.0.1:6379", options())).rejects.toThrow(/^REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL, got a http:/);
    await expect(connectRedisEventBus("not a url at all", options())).rejects.toThrow(/^REDIS_URL/);
  });

  it("gives up on an unreachable server quickly, naming REDIS_URL and the address without its password", async () => {
    const port = await freePort();
    const started = performance.now();
    const error = await connectRedisEventBus(`redis://user:secret@127.0.0.1:${port}/0`, options({ connectTimeoutMs: 1000 })).catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(new RegExp(`^REDIS_URL: cannot reach Redis at redis://user:\\*\\*\\*@127\\.0\\.0\\.1:${port}/0: .*ECONNREFUSED`));
    expect((error as Error).message).not.toContain("secret");
    expect(performance.now() - started).toBeLessThan(1500);
  });

  it("gives up after connectTimeoutMs on a server that accepts but never answers", async () => {
    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as net.AddressInfo;
    try {
      const started = performance.now();
      await expect(connectRedisEventBus(`redis://127.0.0.1:${port}`, options({ connectTimeoutMs: 300 }))).rejects.toThrow(
        /^REDIS_URL: cannot reach Redis at .*no answer within 300 ms/,
      );
      expect(performance.now() - started).toBeLessThan(1000);
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });
});

describe("RedisEventBus", () => {
  it("holds a few connections however many subscribers it serves, and releases them all on close()", async () => {
    const shared = options();
    const a = await connectRedisEventBus(url, shared);
    const b = await connectRedisEventBus(url, shared);
    // 100 runs with 3 subscribers each on B, and 100 conversation subscribers.
    const runs = Array.from({ length: 100 }, () => a.openRun(randomUUID(), randomUUID()));
    for (const run of runs) run.publish(running);
    await Promise.all(runs.map((run) => run.flushed()));
    const subs = await Promise.all(runs.flatMap((run) => [0, 0, 1].map((after) => b.subscribeRun(run.runId, after))));
    const conversationSubs = await Promise.all(runs.map((run) => b.subscribeConversation(run.conversationId)));
    for (const run of runs) run.publish(token("x"));
    // Every subscriber got its events: the feeds are live.
    for (const [i, sub] of subs.entries()) expect((await sub!.next()).value).toMatchObject({ seq: i % 3 === 2 ? 2 : 1 });
    // A: command + pub/sub. B: the same, and one reader per 64 runs followed.
    expect(await busClients(shared.keyPrefix!)).toEqual(["bus-command", "bus-command", "bus-pubsub", "bus-pubsub", "bus-reader-0", "bus-reader-1"]);
    expect(b.stats()).toMatchObject({ runSubscribers: 300, conversationSubscribers: 100 });
    await Promise.all([a.close(), b.close()]);
    for (const sub of conversationSubs) await sub.return!();
    expect(await busClients(shared.keyPrefix!)).toEqual([]);
  });

  it("lets the process exit by itself after close()", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "testkit/redis-bus-exit.ts", url, `runledger-test:${randomUUID()}:`], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout!.on("data", (d) => (output += d));
    child.stderr!.on("data", (d) => (output += d));
    const code = await new Promise<number | null>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(new Error(`the process did not exit within 10 s after close(); output: ${output}`));
      }, 10_000);
      child.once("exit", (exitCode) => {
        clearTimeout(timer);
        resolve(exitCode);
      });
    });
    expect(output).toBe("closed\n");
    expect(code).toBe(0);
  });

  it("keeps exactly `retention` entries, renews an open run's log and lets a finished one expire after the grace period", async () => {
    const opts = options({ retention: 7, graceMs: 2000 });
    const bus = await connectRedisEventBus(url, opts);
    try {
      const run = bus.openRun(randomUUID(), randomUUID());
      const key = `${opts.keyPrefix}run:${run.runId}`;
      for (let i = 0; i < 50; i++) run.publish(token(`t${i}`));
      await run.flushed();
      expect(await admin.xlen(key)).toBe(7);
      // Open: it lives at least 30 s without renewal, whatever the grace period.
      const openTtl = await admin.pttl(key);
      expect(openTtl).toBeGreaterThan(25_000);
      expect(openTtl).toBeLessThanOrEqual(30_000);
      run.publish(completed);
      await run.flushed();
      const finishedTtl = await admin.pttl(key);
      expect(finishedTtl).toBeGreaterThan(0);
      expect(finishedTtl).toBeLessThanOrEqual(2000);
    } finally {
      await bus.close();
    }
  });

  it("with no grace period, a live subscriber on another instance still gets the terminal event of a burst", async () => {
    const shared = options({ graceMs: 0, livenessCheckMs: 100, retention: 10_000 });
    const a = await connectRedisEventBus(url, shared);
    const b = await connectRedisEventBus(url, shared);
    try {
      const run = a.openRun(randomUUID(), randomUUID());
      run.publish(running);
      await run.flushed();
      const sub = (await b.subscribeRun(run.runId))!;
      // More than one read's worth, so B's reader is still busy when the run finishes.
      for (let i = 0; i < 3000; i++) run.publish(token(`t${i}`));
      run.publish(completed);
      const events = [];
      for await (const event of sub) events.push(event);
      expect(events.length).toBe(3002);
      expect(events.at(-1)).toMatchObject({ type: "status", status: "completed", seq: 3002 });
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("reads events an instance wrote before Dates were listed in the text: their `at` and an interrupt's createdAt as Dates", async () => {
    const opts = options();
    const bus = await connectRedisEventBus(url, opts);
    try {
      const runId = randomUUID();
      const conversationId = randomUUID();
      const key = `${opts.keyPrefix}run:${runId}`;
      const at = "2026-12-01T10:00:00.123Z";
      // Plain JSON, as such an instance wrote it: its Dates are strings.
      const written = [
        { type: "interrupt", interrupt: { id: "i-1", node: "approve", value: null, runId, conversationId, createdAt: at }, seq: 1, runId, conversationId, at },
        { type: "status", status: "waiting", errorCode: null, errorMessage: null, seq: 2, runId, conversationId, at },
      ];
      for (const event of written) await admin.xadd(key, `0-${event.seq}`, "e", JSON.stringify(event));
      await admin.pexpire(key, 60_000);
      const events = [];
      for await (const event of (await bus.subscribeRun(runId))!) events.push(event);
      expect(events).toEqual([
        { ...written[0], interrupt: { ...written[0]!.interrupt, createdAt: new Date(at) }, at: new Date(at) },
        { ...written[1], at: new Date(at) },
      ]);
    } finally {
      await bus.close();
    }
  });

  it("flushed() rejects when Redis refused an event: a second instance opening a run that has a log", async () => {
    const shared = options();
    const a = await connectRedisEventBus(url, shared);
    const b = await connectRedisEventBus(url, shared);
    try {
      const runId = randomUUID();
      const first = a.openRun(runId, "c");
      first.publish(running);
      await first.flushed();
      const second = b.openRun(runId, "c");
      second.publish(running);
      await expect(second.flushed()).rejects.toThrow(/equal or smaller/);
      // The first instance's log is untouched.
      const sub = (await a.subscribeRun(runId))!;
      first.publish(completed);
      const events = [];
      for await (const event of sub) events.push(event);
      expect(events.map((e) => e.seq)).toEqual([1, 2]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("fails the subscribers of a log that vanished before its terminal event (its instance died) with RunLogLostError", async () => {
    const shared = options({ livenessCheckMs: 50 });
    const a = await connectRedisEventBus(url, shared);
    const b = await connectRedisEventBus(url, shared);
    try {
      const run = a.openRun(randomUUID(), randomUUID());
      run.publish(running);
      await run.flushed();
      const sub = (await b.subscribeRun(run.runId))!;
      expect((await sub.next()).value).toMatchObject({ seq: 1 });
      const parked = sub.next();
      // What expiry does to the log of an instance that stopped renewing it.
      await admin.del(`${shared.keyPrefix}run:${run.runId}`);
      const error = await within(parked, "the subscriber to fail").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RunLogLostError);
      expect(error).toMatchObject({ code: "RUN_LOG_LOST" });
      expect(b.stats().runSubscribers).toBe(0);
      expect(await b.subscribeRun(run.runId)).toBeNull();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("a run subscriber follows on without gap or duplicate when Redis cuts the bus's connections", async () => {
    const shared = options();
    const a = await connectRedisEventBus(url, shared);
    const b = await connectRedisEventBus(url, shared);
    try {
      const run = a.openRun(randomUUID(), randomUUID());
      run.publish(running);
      await run.flushed();
      const sub = (await b.subscribeRun(run.runId))!;
      const seqs: number[] = [];
      let reached!: () => void;
      const live = new Promise<void>((resolve) => (reached = resolve));
      const read = (async () => {
        for await (const event of sub) {
          seqs.push(event.seq);
          if (event.seq === 51) reached();
        }
      })();
      for (let i = 0; i < 50; i++) run.publish(token(`before ${i}`));
      // Delivered live: B's reader is connected and following.
      await within(live, "the first 51 events");
      // Every connection of both instances: readers blocked in XREAD, the
      // command connections, the pub/sub ones.
      const list = (await admin.client("LIST")) as string;
      const ids = list
        .split("\n")
        .filter((line) => line.includes(`name=${shared.keyPrefix}`))
        .map((line) => /\bid=(\d+)/.exec(line)![1]!);
      expect(ids.length).toBe(5);
      for (const id of ids) await admin.client("KILL", "ID", id);
      for (let i = 0; i < 50; i++) run.publish(token(`after ${i}`));
      run.publish(completed);
      await run.flushed();
      await within(read, "the rest of the run");
      expect(seqs).toEqual(Array.from({ length: 102 }, (_, i) => i + 1));
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("subscribes its pub/sub channels again after Redis cuts that connection, and closes with nothing left unhandled while it does", async () => {
    const shared = options();
    const a = await connectRedisEventBus(url, shared);
    const b = await connectRedisEventBus(url, shared);
    const pubsubIds = async () =>
      ((await admin.client("LIST")) as string)
        .split("\n")
        .filter((line) => line.includes(`name=${shared.keyPrefix}bus-pubsub `))
        .map((line) => /\bid=(\d+)/.exec(line)![1]!);
    try {
      const conversationId = randomUUID();
      const channel = `${shared.keyPrefix}conversation:${conversationId}`;
      const events = await b.subscribeConversation(conversationId);
      const cancels: string[] = [];
      b.onCancelRequest((runId) => cancels.push(runId));
      const changes = await b.subscribeConversationChanges();
      const killed = await pubsubIds();
      expect(killed.length).toBe(2);
      for (const id of killed) await admin.client("KILL", "ID", id);
      // One SUBSCRIBE names every channel: once the conversation's is back, so are the others.
      await within(
        (async () => {
          while (((await admin.call("PUBSUB", "NUMSUB", channel)) as [string, number])[1] !== 1) await new Promise((r) => setTimeout(r, 20));
        })(),
        "the conversation's channel subscribed again",
      );
      expect((await pubsubIds()).some((id) => killed.includes(id))).toBe(false);
      await a.requestCancel("run-after-the-cut");
      await a.publishConversationChange({ conversationId, kind: "updated", at: new Date() });
      const run = a.openRun(randomUUID(), conversationId);
      run.publish(running);
      await run.flushed();
      expect((await within(events.next(), "the conversation's event")).value).toMatchObject({ runId: run.runId, seq: 1 });
      expect((await within(changes.next(), "the conversation change")).value).toMatchObject({ conversationId, kind: "updated" });
      expect(cancels).toEqual(["run-after-the-cut"]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
    // Cut again and closed at once, while the connections are being made again:
    // a SUBSCRIBE that never gets its reply must not reject unhandled.
    const c = await connectRedisEventBus(url, shared);
    await c.subscribeConversation(randomUUID());
    for (const id of await pubsubIds()) await admin.client("KILL", "ID", id);
    await c.close();
  });

  it("a live subscriber that the trimming overtook gets a replayGap for what it missed, then the rest", async () => {
    // Delivery is asynchronous here: a burst of more than `retention` events in
    // one pipeline is trimmed before B's reader gets to it. (The memory bus
    // hands events over as they are published, so it never gaps live.)
    const shared = options({ retention: 5 });
    const a = await connectRedisEventBus(url, shared);
    const b = await connectRedisEventBus(url, shared);
    try {
      const run = a.openRun(randomUUID(), randomUUID());
      run.publish(running);
      await run.flushed();
      const sub = (await b.subscribeRun(run.runId, 1))!;
      for (let i = 0; i < 200; i++) run.publish(token(`t${i}`));
      run.publish(completed);
      const covered: number[] = [];
      let gaps = 0;
      await within(
        (async () => {
          for await (const event of sub) {
            if (event.type === "replayGap") {
              gaps += 1;
              expect(event.seq).toBe(event.toSeq);
              for (let seq = event.fromSeq; seq <= event.toSeq; seq++) covered.push(seq);
            } else covered.push(event.seq);
          }
        })(),
        "the run",
      );
      expect(gaps).toBeGreaterThanOrEqual(1);
      expect(covered).toEqual(Array.from({ length: 201 }, (_, i) => i + 2));
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("unsubscribes a conversation's channel when its last subscriber leaves, and keeps it while one stays", async () => {
    const shared = options();
    const bus = await connectRedisEventBus(url, shared);
    try {
      const conversationId = randomUUID();
      const channel = `${shared.keyPrefix}conversation:${conversationId}`;
      const numsub = async () => ((await admin.call("PUBSUB", "NUMSUB", channel)) as [string, number])[1];
      const first = await bus.subscribeConversation(conversationId);
      const second = await bus.subscribeConversation(conversationId);
      expect(await numsub()).toBe(1);
      await first.return!();
      expect(await numsub()).toBe(1);
      await second.return!();
      // UNSUBSCRIBE is not awaited by return(); the next command on the
      // subscriber connection is ordered after it.
      const again = await bus.subscribeConversation(randomUUID());
      expect(await numsub()).toBe(0);
      await again.return!();
    } finally {
      await bus.close();
    }
  });
});
