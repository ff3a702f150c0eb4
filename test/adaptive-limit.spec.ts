// The instance's admission limit follows its event loop's delay: MAX_ACTIVE_RUNS
// while the loop keeps up, fewer (down to 4) while it runs late, or while work
// waits long for its turn on it.
import { describe, expect, it } from "vitest";
import { ADAPTIVE_FLOOR, ADAPTIVE_WINDOW_MS, createAdaptiveLimit, nextLimit } from "../src/runs/adaptive-limit.ts";
import { Turns } from "../src/turns.ts";

const settings = { max: 64, targetMs: 10 };

describe("the limit after a window", () => {
  it("shrinks by a quarter while the loop is later than the target, never below the floor", () => {
    expect(nextLimit(64, 11, settings)).toBe(48);
    expect(nextLimit(48, 80, settings)).toBe(36);
    expect(nextLimit(5, 80, settings)).toBe(ADAPTIVE_FLOOR);
    expect(nextLimit(ADAPTIVE_FLOOR, 500, settings)).toBe(ADAPTIVE_FLOOR);
  });

  it("grows by one while the loop keeps up, never above MAX_ACTIVE_RUNS", () => {
    expect(nextLimit(ADAPTIVE_FLOOR, 10, settings)).toBe(ADAPTIVE_FLOOR + 1);
    expect(nextLimit(63, 0, settings)).toBe(64);
    expect(nextLimit(64, 0, settings)).toBe(64);
  });

  it("keeps a MAX_ACTIVE_RUNS below the floor as it is, and stays at MAX_ACTIVE_RUNS with the target 0", () => {
    expect(nextLimit(2, 500, { max: 2, targetMs: 10 })).toBe(2);
    expect(nextLimit(1, 0, { max: 1, targetMs: 10 })).toBe(1);
    expect(nextLimit(64, 500, { max: 64, targetMs: 0 })).toBe(64);
  });
});

/** Keeps this process's event loop busy: `blockMs` of work in every turn, for `forMs`. */
async function busyLoop(forMs: number, blockMs: number): Promise<void> {
  const until = Date.now() + forMs;
  while (Date.now() < until) {
    const end = Date.now() + blockMs;
    while (Date.now() < end) {
      // busy: no timer, no I/O callback runs meanwhile
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe("on this process's event loop", () => {
  it("starts at MAX_ACTIVE_RUNS, shrinks while the loop is held up, and grows back once it keeps up", async () => {
    const limit = createAdaptiveLimit(settings);
    try {
      expect(limit.current()).toBe(64);
      await busyLoop(ADAPTIVE_WINDOW_MS * 8, 60);
      const lowest = limit.current();
      expect(lowest).toBeLessThan(64);
      const deadline = Date.now() + 15_000;
      while (limit.current() <= lowest && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(limit.current()).toBeGreaterThan(lowest);
    } finally {
      limit.stop();
    }
  });

  it("shrinks while work waits longer than the target for its turn, though the loop itself is free", async () => {
    const turns = new Turns();
    const limit = createAdaptiveLimit({ ...settings, turns });
    try {
      // Turns that waited 50 ms each, recorded as a held-up process's turns are; nothing holds the loop here.
      const until = Date.now() + ADAPTIVE_WINDOW_MS * 4;
      while (Date.now() < until) {
        for (let i = 0; i < 10; i++) turns.waits.record(50e6);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(limit.current()).toBeLessThan(64);
    } finally {
      limit.stop();
    }
  });

  it("with the target 0 stays at MAX_ACTIVE_RUNS however late the loop runs", async () => {
    const limit = createAdaptiveLimit({ max: 64, targetMs: 0 });
    try {
      await busyLoop(ADAPTIVE_WINDOW_MS * 4, 60);
      expect(limit.current()).toBe(64);
    } finally {
      limit.stop();
    }
  });
});
