// Many runs at once in one process: they all complete, no write fails with
// SQLITE_BUSY, and the event loop keeps answering. The write gate that orders the
// process's writes, one per turn of the event loop, is tested here too.
import fs from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "./support/fake-ollama.ts";
import { startTestApp } from "./support/app.ts";
import { CONVERSATION, RUN_EVENTS, START_RUN, collect, gql, gqlOk, wsClient } from "./support/graphql.ts";
import { WriteGate } from "../src/db/write-gate.ts";
import type { App } from "../src/app.ts";

describe("the write gate", () => {
  it("runs writes one at a time, in order, each in its own turn of the event loop; a failed write does not stop the next", async () => {
    const gate = new WriteGate();
    const log: string[] = [];
    const slow = gate.run(async () => {
      log.push("slow start");
      await new Promise((resolve) => setTimeout(resolve, 20));
      log.push("slow end");
    });
    const writes = [1, 2, 3].map((i) =>
      gate.run(() => {
        log.push(`write ${i}`);
        // Queued now, this runs before the next write: the gate gives the loop back between writes.
        setImmediate(() => log.push(`turn after ${i}`));
        if (i === 2) throw new Error("write 2 failed");
        return i;
      }),
    );
    await slow;
    expect(await writes[0]).toBe(1);
    await expect(writes[1]).rejects.toThrow("write 2 failed");
    expect(await writes[2]).toBe(3);
    await new Promise((resolve) => setImmediate(resolve));
    expect(log).toEqual(["slow start", "slow end", "write 1", "turn after 1", "write 2", "turn after 2", "write 3", "turn after 3"]);
  });
});

describe("load", () => {
  let fake: FakeOllama;
  let app: App;
  beforeAll(async () => {
    fake = await startFakeOllama({ defaultDelayMs: 5 });
    app = await startTestApp({ ollamaUrl: fake.url });
  });
  afterAll(async () => {
    await app?.close();
    await fake?.close();
  });

  it("20 concurrent runs on different conversations all complete, with no SQLITE_BUSY and no event-loop stall over 100 ms", async () => {
    const client = wsClient(app.url);
    try {
      // One run first: the first use of each code path loads modules lazily, a one-time cost.
      const warmup = await gqlOk(app.url, START_RUN, { message: "Please calculate 1 + 1" });
      await collect(client, RUN_EVENTS, { runId: warmup.startRun.run.id }).done;

      const delay = monitorEventLoopDelay({ resolution: 10 });
      delay.enable();
      const busy = watchBusyStretches();
      const starts = await Promise.all(Array.from({ length: 20 }, (_, i) => gql(app.url, START_RUN, { message: `Please calculate ${i} * 3` })));
      const runs = starts.map((s) => {
        expect(s.errors).toBeUndefined();
        expect(s.data.startRun.__typename).toBe("StartRunSuccess");
        return { runId: s.data.startRun.run.id as string, conversationId: s.data.startRun.conversation.id as string };
      });
      const events = await Promise.all(runs.map(({ runId }) => collect(client, RUN_EVENTS, { runId }).done));
      delay.disable();
      const worst = busy.stop();

      for (const [i, list] of events.entries()) {
        expect(list.at(-1)!.runEvents).toMatchObject({ __typename: "RunStatusEvent", status: "COMPLETED", errorCode: null });
        const { conversation } = await gqlOk(app.url, CONVERSATION, { id: runs[i]!.conversationId });
        expect(conversation.messages.at(-1)).toMatchObject({ role: "ASSISTANT", content: `The result is ${i * 3}.` });
      }
      const maxStallMs = delay.max / 1e6;
      console.info(
        `20 concurrent runs: event-loop delay max ${maxStallMs.toFixed(1)} ms, p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms; ` +
          `longest stretch without a turn: ${worst.wallMs.toFixed(1)} ms wall, ${worst.cpuMs.toFixed(1)} ms CPU`,
      );
      expect(worst.cpuMs).toBeLessThan(100);
    } finally {
      await client.dispose();
    }
  });
});

/**
 * Samples every few milliseconds how long the event loop went without a turn
 * (wall time) and how much CPU the event-loop thread spent meanwhile. On a
 * machine shared with other work the wall time includes the time this process
 * waited for a core; the thread's CPU time is what it spent without yielding,
 * its own garbage collection included. Linux tells a thread's CPU time (in
 * 10 ms ticks); elsewhere the whole process's is used, an overestimate.
 */
function watchBusyStretches() {
  let lastWall = performance.now();
  let lastCpu = loopThreadCpuMs();
  let worst = { wallMs: 0, cpuMs: 0 };
  const timer = setInterval(() => {
    const wall = performance.now();
    const cpu = loopThreadCpuMs();
    const stretch = { wallMs: wall - lastWall, cpuMs: cpu - lastCpu };
    if (stretch.cpuMs > worst.cpuMs || (stretch.cpuMs === worst.cpuMs && stretch.wallMs > worst.wallMs)) worst = stretch;
    lastWall = wall;
    lastCpu = cpu;
  }, 5);
  return {
    stop() {
      clearInterval(timer);
      return worst;
    },
  };
}

const THREAD_STAT = `/proc/self/task/${process.pid}/stat`;
const TICK_MS = 10; // USER_HZ is 100 on Linux

function loopThreadCpuMs(): number {
  try {
    // Fields after the command name, which is in parentheses: utime and stime are the 12th and 13th.
    const fields = fs.readFileSync(THREAD_STAT, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1000;
  }
}
