// How many runs this instance admits now: MAX_ACTIVE_RUNS at most, and with
// ADMISSION_LOOP_DELAY_MS set (it is off by default), fewer while its event
// loop runs late. Every request, token and heartbeat of the instance shares
// one thread; once that thread is busy all the time, every answer waits its
// turn (a startRun, the next token of every run; src/turns.ts). Admitting
// fewer runs then keeps answers on time, at the price of finishing fewer runs
// a second when the model could serve more (bench/analysis.md, "The queue").
// Late is the larger of two delays: the loop's own (a timer firing late) and
// how long work waited for its turn, which is where a busy loop's delay shows
// once heavy work takes turns. The limit shrinks by a quarter in a window
// where the delay is over the target, and grows by one in a window where it is
// under, never below ADAPTIVE_FLOOR. Runs beyond it wait QUEUED
// (INSTANCE_FULL), for this or another instance, as they do beyond
// MAX_ACTIVE_RUNS.
import { monitorEventLoopDelay } from "node:perf_hooks";
import { turns as processTurns, type Turns } from "../turns.ts";

/** Runs admitted at least, however late the loop: a busy instance still makes progress. */
export const ADAPTIVE_FLOOR = 4;
/** How often the delay is read and the limit moved. */
export const ADAPTIVE_WINDOW_MS = 250;
/** How often the event loop's delay is sampled. */
const RESOLUTION_MS = 10;

export interface AdaptiveLimitSettings {
  /** `MAX_ACTIVE_RUNS`: the limit never goes above it. */
  max: number;
  /** `ADMISSION_LOOP_DELAY_MS`: the event-loop delay (p90 of a window) the limit keeps under; 0 keeps the limit at max. */
  targetMs: number;
  /** Whose turn waits count: the process's own (src/turns.ts) unless given. */
  turns?: Turns;
}

/** The limit after one window whose delay (p90 of the loop's, or of the turns', the larger) was `delayMs`. */
export function nextLimit(limit: number, delayMs: number, settings: AdaptiveLimitSettings): number {
  const floor = Math.min(ADAPTIVE_FLOOR, settings.max);
  if (settings.targetMs <= 0) return settings.max;
  if (delayMs > settings.targetMs) return Math.max(floor, Math.floor(limit * 0.75));
  return Math.min(settings.max, limit + 1);
}

export interface AdaptiveLimit {
  /** Runs this instance may execute at once now. */
  current(): number;
  stop(): void;
}

/** Follows this process's event-loop delay and turn waits; starts at max. */
export function createAdaptiveLimit(settings: AdaptiveLimitSettings): AdaptiveLimit {
  let limit = settings.max;
  if (settings.targetMs <= 0) return { current: () => limit, stop() {} };
  const waits = (settings.turns ?? processTurns).waits;
  waits.reset();
  const delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  delay.enable();
  const timer = setInterval(() => {
    // The loop's histogram holds each sampling interval whole: what is late is the excess over it.
    const loopLate = delay.percentile(90) / 1e6 - RESOLUTION_MS;
    const turnLate = waits.count > 0 ? waits.percentile(90) / 1e6 : 0;
    limit = nextLimit(limit, Math.max(loopLate, turnLate), settings);
    delay.reset();
    waits.reset();
  }, ADAPTIVE_WINDOW_MS);
  timer.unref();
  return {
    current: () => limit,
    stop() {
      clearInterval(timer);
      delay.disable();
    },
  };
}
