// Many runs at once in one process: they all complete, no write fails with
// SQLITE_BUSY, and the event loop keeps answering. The write gate that orders the
// process's writes, one per turn of the event loop, is tested here too.
import fs from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp } from "../testkit/app.ts";
import { collect, gql, gqlOk, wsClient } from "../testkit/graphql.ts";
import { CONVERSATION, RUN_EVENTS, START_RUN } from "../testkit/documents.ts";
import { WriteGate } from "../src/storage/sqlite/write-gate.ts";
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
      const stalls = watchStalls();
      const starts = await Promise.all(Array.from({ length: 20 }, (_, i) => gql(app.url, START_RUN, { message: `Please calculate ${i} * 3` })));
      const runs = starts.map((s) => {
        expect(s.errors).toBeUndefined();
        expect(s.data.startRun.__typename).toBe("StartRunSuccess");
        return { runId: s.data.startRun.run.id as string, conversationId: s.data.startRun.conversation.id as string };
      });
      const events = await Promise.all(runs.map(({ runId }) => collect(client, RUN_EVENTS, { runId }).done));
      delay.disable();
      const worst = stalls.stop();

      for (const [i, list] of events.entries()) {
        expect(list.at(-1)!.runEvents).toMatchObject({ __typename: "RunStatusEvent", status: "COMPLETED", errorCode: null });
        const { conversation } = await gqlOk(app.url, CONVERSATION, { id: runs[i]!.conversationId });
        expect(conversation.messages.at(-1)).toMatchObject({ role: "ASSISTANT", content: `The result is ${i * 3}.` });
      }
      const maxStallMs = delay.max / 1e6;
      console.info(
        `20 concurrent runs: monitorEventLoopDelay max ${maxStallMs.toFixed(1)} ms, p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms; ` +
          `longest stall of this process's own: ${worst.stallMs.toFixed(1)} ms ` +
          `(${worst.wallMs.toFixed(1)} ms without a turn, ${worst.onCpuMs.toFixed(1)} ms on a core, ${worst.waitingForCpuMs.toFixed(1)} ms waiting for one)`,
      );
      expect(worst.stallMs).toBeLessThan(100);
      // Whatever the machine's load, a multi-second freeze (a lock wait, say) fails here too.
      expect(maxStallMs).toBeLessThan(2_000);
    } finally {
      await client.dispose();
    }
  });
});

/**
 * Samples every few milliseconds how long the event loop went without a turn,
 * and splits that wall time with the kernel's scheduler statistics for the
 * event-loop thread: time on a core, and time it was ready to run but waited for
 * one. On a machine shared with other work the waiting is the machine's doing;
 * the rest (running, or blocked in a call such as a lock wait) is this process
 * keeping its own loop from turning: the stall that counts. Where the kernel
 * does not tell (not Linux), the whole wall time counts.
 */
function watchStalls() {
  let last = { wallMs: performance.now(), ...loopThreadSchedule() };
  let worst = { stallMs: 0, wallMs: 0, onCpuMs: 0, waitingForCpuMs: 0 };
  const timer = setInterval(() => {
    const now = { wallMs: performance.now(), ...loopThreadSchedule() };
    const wallMs = now.wallMs - last.wallMs;
    const onCpuMs = now.onCpuMs - last.onCpuMs;
    const waitingForCpuMs = now.waitingForCpuMs - last.waitingForCpuMs;
    const stallMs = wallMs - waitingForCpuMs;
    if (stallMs > worst.stallMs) worst = { stallMs, wallMs, onCpuMs, waitingForCpuMs };
    last = now;
  }, 5);
  return {
    stop() {
      clearInterval(timer);
      return worst;
    },
  };
}

const SCHEDSTAT = `/proc/self/task/${process.pid}/schedstat`;

/** The event-loop thread's time on a core and time waiting for one, from /proc (nanoseconds there); zeros elsewhere. */
function loopThreadSchedule(): { onCpuMs: number; waitingForCpuMs: number } {
  try {
    const [onCpuNs, waitingNs] = fs.readFileSync(SCHEDSTAT, "utf8").trim().split(" ").map(Number);
    return { onCpuMs: onCpuNs! / 1e6, waitingForCpuMs: waitingNs! / 1e6 };
  } catch {
    return { onCpuMs: 0, waitingForCpuMs: 0 };
  }
}
