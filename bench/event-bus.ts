// The event bus alone: publish → deliver latency and CPU per delivered event,
// for the memory bus (one process) and the Redis bus (the publishing instance
// here, the subscribing instance in a child process, one Redis between them).
//
//   npx tsx bench/event-bus.ts                       starts a throwaway redis-server
//   npx tsx bench/event-bus.ts --redis-url redis://127.0.0.1:6379
//   npx tsx bench/event-bus.ts --reps 3 --paced 150 --burst 5000
//
// Cases: one run publishing at 50 events/s (paced; with, as a floor, the same
// pacing through raw ioredis XADD and XREAD), and one publishing a burst
// as fast as it can (yielding to the event loop every 100 events, so replies
// and deliveries interleave with it); each with 1 and with 10 subscribers on the
// subscribing instance. CPU (bursts only) is process CPU time, user + system:
// per delivered event for the memory bus (publisher and subscribers share the
// process), per side for Redis, and redis-server's per published event. Last,
// redis-server's CPU per XADD with exact and with approximate trimming.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import os from "node:os";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import type { RunEventBody } from "../src/domain/events.ts";
import { MemoryEventBus } from "../src/storage/event-bus/memory.ts";
import { connectRedisEventBus } from "../src/storage/event-bus/redis.ts";
import type { EventBus, EventBusOptions } from "../src/storage/event-bus/types.ts";
import { nowMs } from "../testkit/clock.ts";
import { median, percentiles, type Percentiles } from "./lib/stats.ts";

const BUS_OPTIONS: EventBusOptions = { retention: 10_000, graceMs: 60_000, subscriberQueueLimit: 10_000 };
const running: RunEventBody = { type: "status", status: "running", errorCode: null, errorMessage: null };
const completed: RunEventBody = { type: "status", status: "completed", errorCode: null, errorMessage: null };
/** A token event the size of a real one, carrying its publish time. */
const stamped = (): RunEventBody => ({ type: "token", text: `${nowMs().toFixed(4)} lorem`, messageId: "msg-0123456789", node: "agent" });

interface Case {
  pacing: "paced" | "burst";
  events: number;
  subscribers: number;
}

interface SideResult {
  latencies: number[];
  delivered: number;
  cpuMs: number;
}

/** Reads every subscriber to its end, recording publish → deliver latency of the stamped events. */
async function follow(bus: EventBus, runId: string, subscribers: number): Promise<() => Promise<SideResult>> {
  const subs = await Promise.all(Array.from({ length: subscribers }, () => bus.subscribeRun(runId)));
  const latencies: number[] = [];
  let delivered = 0;
  const done = Promise.all(
    subs.map(async (sub) => {
      for await (const event of sub!) {
        const at = nowMs();
        delivered += 1;
        if (event.type === "token") latencies.push(at - Number.parseFloat(event.text));
      }
    }),
  );
  const cpu0 = process.cpuUsage();
  return async () => {
    await done;
    const cpu = process.cpuUsage(cpu0);
    return { latencies, delivered, cpuMs: (cpu.user + cpu.system) / 1000 };
  };
}

async function publish(run: ReturnType<EventBus["openRun"]>, c: Case) {
  if (c.pacing === "paced") {
    const start = nowMs();
    for (let i = 0; i < c.events; i++) {
      const due = start + i * 20;
      const wait = due - nowMs();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      run.publish(stamped());
    }
  } else {
    for (let i = 0; i < c.events; i++) {
      run.publish(stamped());
      if (i % 100 === 99) await new Promise((r) => setImmediate(r));
    }
  }
  run.publish(completed);
  await run.flushed();
}

async function memoryCase(c: Case) {
  const bus = new MemoryEventBus(BUS_OPTIONS);
  const runId = randomUUID();
  const run = bus.openRun(runId, randomUUID());
  run.publish(running);
  const finish = await follow(bus, runId, c.subscribers);
  await publish(run, c);
  const result = await finish();
  await bus.close();
  return { latency: percentiles(result.latencies), cpuPerDelivered: (result.cpuMs * 1000) / result.delivered };
}

async function redisServerCpuMs(admin: Redis): Promise<number> {
  const info = await admin.info("cpu");
  const read = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? Number.NaN);
  return (read("used_cpu_user") + read("used_cpu_sys")) * 1000;
}

/** Instance B in a child process: subscribes to the runs it is sent on stdin and reports on stdout. */
class SubscriberProcess {
  readonly #child;
  #output = "";
  #waiters: ((line: string) => void)[] = [];

  constructor(url: string, keyPrefix: string) {
    this.#child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "--subscriber", url, keyPrefix], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    this.#child.stdout!.setEncoding("utf8");
    this.#child.stdout!.on("data", (chunk: string) => {
      this.#output += chunk;
      let newline;
      while ((newline = this.#output.indexOf("\n")) >= 0) {
        const line = this.#output.slice(0, newline);
        this.#output = this.#output.slice(newline + 1);
        this.#waiters.shift()?.(line);
      }
    });
  }

  #line(): Promise<string> {
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Subscribes there; resolves once it is following, with a function that resolves to what it measured. */
  async follow(runId: string, subscribers: number): Promise<() => Promise<SideResult>> {
    const ready = this.#line();
    const result = this.#line();
    this.#child.stdin!.write(`${runId} ${subscribers}\n`);
    if ((await ready) !== "ready") throw new Error("the subscriber process failed");
    return async () => JSON.parse(await result) as SideResult;
  }

  async stop() {
    const exited = new Promise((resolve) => this.#child.once("exit", resolve));
    this.#child.stdin!.end();
    await exited;
  }
}

async function redisCase(c: Case, url: string, admin: Redis, keyPrefix: string, b: SubscriberProcess) {
  const bus = await connectRedisEventBus(url, { ...BUS_OPTIONS, keyPrefix });
  const runId = randomUUID();
  const run = bus.openRun(runId, randomUUID());
  run.publish(running);
  await run.flushed();
  const finish = await b.follow(runId, c.subscribers);
  const server0 = await redisServerCpuMs(admin);
  const cpu0 = process.cpuUsage();
  await publish(run, c);
  const cpu = process.cpuUsage(cpu0);
  const side = await finish();
  const server = (await redisServerCpuMs(admin)) - server0;
  await bus.close();
  const published = c.events + 1;
  return {
    latency: percentiles(side.latencies),
    publisherCpuPerEvent: (cpu.user + cpu.system) / published,
    subscriberCpuPerDelivered: (side.cpuMs * 1000) / side.delivered,
    serverCpuPerEvent: (server * 1000) / published,
  };
}

/** The child: instance B. One line in per run to follow ("<runId> <subscribers>"), "ready" and then a JSON line out. */
async function subscriberMain(url: string, keyPrefix: string) {
  const bus = await connectRedisEventBus(url, { ...BUS_OPTIONS, keyPrefix });
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    const [runId, subscribers] = line.split(" ");
    const finish = await follow(bus, runId!, Number(subscribers));
    process.stdout.write("ready\n");
    process.stdout.write(`${JSON.stringify(await finish())}\n`);
  }
  await bus.close();
}

/**
 * The floor for the paced Redis case: raw ioredis XADD here, a raw XREAD BLOCK
 * loop in a child process, same pacing and payload size; no bus on either side.
 */
async function redisFloor(url: string, events: number): Promise<Percentiles> {
  const key = `runledger-bench:floor:${randomUUID()}`;
  const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "--floor", url, key], { stdio: ["ignore", "pipe", "inherit"] });
  child.stdout!.setEncoding("utf8");
  let output = "";
  const ready = new Promise<void>((resolve) =>
    child.stdout!.on("data", (chunk: string) => {
      output += chunk;
      if (output.startsWith("ready\n")) resolve();
    }),
  );
  const exited = new Promise((resolve) => child.once("exit", resolve));
  await ready;
  const redis = new Redis(url);
  const start = nowMs();
  for (let i = 1; i <= events; i++) {
    const wait = start + i * 20 - nowMs();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    void redis.xadd(
      key,
      "MAXLEN",
      BUS_OPTIONS.retention,
      `0-${i}`,
      "e",
      JSON.stringify({ ...stamped(), seq: i, runId: key, conversationId: key, at: new Date() }),
    );
  }
  await redis.xadd(key, "MAXLEN", BUS_OPTIONS.retention, `0-${events + 1}`, "e", "end");
  await exited;
  await redis.del(key);
  redis.disconnect();
  return JSON.parse(output.slice("ready\n".length)) as Percentiles;
}

async function floorMain(url: string, key: string) {
  const redis = new Redis(url);
  const latencies: number[] = [];
  let id = "0-0";
  process.stdout.write("ready\n");
  for (let done = false; !done;) {
    const reply = (await redis.xread("BLOCK", 10_000, "STREAMS", key, id)) as [string, [string, string[]][]][] | null;
    const at = nowMs();
    for (const [, entries] of reply ?? []) {
      for (const [entryId, fields] of entries) {
        id = entryId;
        if (fields[1] === "end") done = true;
        else latencies.push(at - Number.parseFloat((JSON.parse(fields[1]!) as { text: string }).text));
      }
    }
  }
  redis.disconnect();
  process.stdout.write(JSON.stringify(percentiles(latencies)));
}

/** Redis server CPU per XADD with exact and with approximate trimming, in a steady state past the retention. */
async function trimCost(admin: Redis) {
  const out: Record<string, number> = {};
  for (const mode of ["=", "~"]) {
    const key = `runledger-bench:trim:${randomUUID()}`;
    const payload = JSON.stringify({ type: "token", text: "x".repeat(60), seq: 0, runId: randomUUID(), at: new Date() });
    const fill = 10_000;
    for (let i = 1; i <= fill; i += 1000) {
      const p = admin.pipeline();
      for (let j = i; j < i + 1000; j++) p.xadd(key, "MAXLEN", mode, 1000, `0-${j}`, "e", payload);
      await p.exec();
    }
    const cpu0 = await redisServerCpuMs(admin);
    const n = 50_000;
    for (let i = fill + 1; i <= fill + n; i += 1000) {
      const p = admin.pipeline();
      for (let j = i; j < i + 1000; j++) p.xadd(key, "MAXLEN", mode, 1000, `0-${j}`, "e", payload);
      await p.exec();
    }
    out[mode === "=" ? "exact" : "approximate"] = (((await redisServerCpuMs(admin)) - cpu0) * 1000) / n;
    out[`${mode === "=" ? "exact" : "approximate"} length`] = await admin.xlen(key);
    await admin.del(key);
  }
  return out;
}

const fmt = (p: Percentiles) => `${p.p50.toFixed(2)} / ${p.p95.toFixed(2)} / ${p.p99.toFixed(2)} / ${p.max.toFixed(2)} ms (n=${p.n})`;
const us = (v: number) => `${v.toFixed(1)} µs`;

async function main() {
  const { values } = parseArgs({
    options: {
      "redis-url": { type: "string" },
      reps: { type: "string", default: "3" },
      paced: { type: "string", default: "150" },
      burst: { type: "string", default: "5000" },
    },
  });
  const reps = Number(values.reps);
  let url = values["redis-url"];
  if (!url) ({ url } = await (await import("../testkit/services.ts")).redisServer());
  const admin = new Redis(url);
  const cases: Case[] = [
    { pacing: "paced", events: Number(values.paced), subscribers: 1 },
    { pacing: "paced", events: Number(values.paced), subscribers: 10 },
    { pacing: "burst", events: Number(values.burst), subscribers: 1 },
    { pacing: "burst", events: Number(values.burst), subscribers: 10 },
  ];
  const keyPrefix = `runledger-bench:${randomUUID()}:`;
  const b = new SubscriberProcess(url, keyPrefix);
  for (const c of cases) {
    const label = `${c.pacing === "paced" ? "50 events/s" : `burst of ${c.events}`}, ${c.subscribers} subscriber(s)`;
    const memory = [];
    const redis = [];
    // The first repetition warms the JIT up on both sides and is not counted.
    for (let r = 0; r <= reps; r++) {
      const m = await memoryCase(c);
      const x = await redisCase(c, url, admin, keyPrefix, b);
      if (r > 0) {
        memory.push(m);
        redis.push(x);
      }
    }
    const pick = <T>(runs: T[], f: (run: T) => number) => median(runs.map(f));
    const lat = <T extends { latency: Percentiles }>(runs: T[]) => ({
      p50: pick(runs, (x) => x.latency.p50),
      p95: pick(runs, (x) => x.latency.p95),
      p99: pick(runs, (x) => x.latency.p99),
      max: pick(runs, (x) => x.latency.max),
      n: runs[0]!.latency.n,
    });
    console.log(`\n${label} (median of ${reps} repetitions; latency p50 / p95 / p99 / max; load average ${os.loadavg()[0]!.toFixed(1)})`);
    // At 50 events/s a process's fixed costs per second (timers, GC, idle
    // connections) dwarf the bus's cost per event: CPU is shown for bursts only.
    const cpu = c.pacing === "burst";
    console.log(`  memory   latency ${fmt(lat(memory))}${cpu ? `; CPU per delivered event ${us(pick(memory, (x) => x.cpuPerDelivered))}` : ""}`);
    if (c.pacing === "paced" && c.subscribers === 1) {
      const floors = [];
      for (let r = 0; r < reps; r++) floors.push(await redisFloor(url, c.events));
      console.log(`  floor    latency ${fmt(lat(floors.map((latency) => ({ latency }))))}: raw ioredis XADD → XREAD BLOCK in another process, no bus`);
    }
    console.log(
      `  redis    latency ${fmt(lat(redis))}` +
        (cpu
          ? `; CPU publisher ${us(pick(redis, (x) => x.publisherCpuPerEvent))}/event, ` +
            `subscriber instance ${us(pick(redis, (x) => x.subscriberCpuPerDelivered))}/delivered, redis-server ${us(pick(redis, (x) => x.serverCpuPerEvent))}/event`
          : ""),
    );
  }
  await b.stop();
  const trim = await trimCost(admin);
  console.log(
    `\nredis-server CPU per XADD past the retention (1000): exact ${us(trim.exact!)} (length ${trim["exact length"]}), approximate ${us(trim.approximate!)} (length ${trim["approximate length"]})`,
  );
  admin.disconnect();
}

const args = process.argv.slice(2);
if (args[0] === "--subscriber") await subscriberMain(args[1]!, args[2]!);
else if (args[0] === "--floor") await floorMain(args[1]!, args[2]!);
else await main();
