// Marks: the time-ordered ids that bound a run's correlation window. They come
// from the UUID v6 generator LangGraph uses for checkpoint_id, so comparing a
// mark with a checkpoint id compares two moments, finer than a millisecond (the
// generator keeps a sub-millisecond counter: successive calls sort in call
// order). This is the only place runledger mints them.
//
// A run's marks and its checkpoint ids all come from the clock of the instance
// that executes it. Across instances (a run on A, the next on B) the clocks may
// disagree: mintMarkAfter keeps a run's start after everything its conversation
// already recorded, by waiting out a clock that is behind, within a bound.
import { uuid6 } from "@langchain/langgraph-checkpoint";

/** The clock sequence of runledger's marks; LangGraph's own checkpoint ids use others, so a mark never equals one. */
const MARK_CLOCKSEQ = -2;

/**
 * A checkpoint id for now, as LangGraph mints them: for the checkpoints runledger
 * writes itself (a fork's copy of another thread's history, under new ids so
 * every checkpoint id stays unique across conversations).
 */
export function mintCheckpointId(): string {
  return uuid6(-1);
}

/** A mark for now: taken just before a run starts, or just after it ends. */
export function mintMark(): string {
  return uuid6(MARK_CLOCKSEQ);
}

export class ClockSkewError extends Error {
  override name = "ClockSkewError";
  constructor(readonly behindMs: number) {
    super(
      `this instance's clock is about ${behindMs} ms behind the conversation's last recorded moment (more than MAX_CLOCK_SKEW_MS); fix the clock (NTP) before starting runs here`,
    );
  }
}

/** The millisecond a v6 id stands for (its 48-bit timestamp, rearranged). */
function millisecondOf(id: string): number {
  const hex = id.replace(/-/g, "");
  // v6: time_high(32) time_mid(16) version(4) time_low(12), counting 100 ns since 1582-10-15.
  const ticks = BigInt(`0x${hex.slice(0, 12)}${hex.slice(13, 16)}`);
  return Number(ticks / 10_000n - 12_219_292_800_000n);
}

/**
 * A mark later than `floor` (an earlier mark or checkpoint id of the same
 * conversation, or null). When this clock is behind, waits until it has passed
 * the floor; more than `maxWaitMs` behind is a ClockSkewError and nothing waits.
 */
export async function mintMarkAfter(floor: string | null, maxWaitMs: number): Promise<string> {
  let mark = mintMark();
  if (floor === null || mark > floor) return mark;
  const behindMs = millisecondOf(floor) - Date.now() + 1;
  if (behindMs > maxWaitMs) throw new ClockSkewError(behindMs);
  const deadline = Date.now() + maxWaitMs;
  while (mark <= floor) {
    if (Date.now() > deadline) throw new ClockSkewError(behindMs);
    await new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.min(50, behindMs))));
    mark = mintMark();
  }
  return mark;
}
