// The merge: runs and checkpoints of one thread, both sorted, paired by the
// window rule (window.ts) in one pass.
import { holds, startedBy, type RunWindow } from "./window.ts";

/**
 * For each checkpoint id, the run whose window holds it, or null. `runs` are in
 * start order and `checkpointIds` ascending; one pass over both, O(R + K).
 */
export function correlate<R extends RunWindow>(runs: readonly R[], checkpointIds: readonly string[]): (R | null)[] {
  const result: (R | null)[] = [];
  let i = 0;
  for (const id of checkpointIds) {
    // Move to the latest run started at or before this checkpoint. (With
    // non-overlapping windows this is the only run that can hold it; an open run
    // that is not the last one therefore ends where the next begins.)
    while (i + 1 < runs.length && startedBy(runs[i + 1]!, id)) i += 1;
    const run = runs[i];
    result.push(run !== undefined && holds(run, id) ? run : null);
  }
  return result;
}

/** The run whose window holds one checkpoint id (binary search over runs in start order). */
export function runAt<R extends RunWindow>(runs: readonly R[], id: string): R | null {
  let lo = 0;
  let hi = runs.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (startedBy(runs[mid]!, id)) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  const run = found >= 0 ? runs[found]! : null;
  return run !== null && holds(run, id) ? run : null;
}

/**
 * Messages in the order they first appear across a thread's history (oldest
 * checkpoint first), with that checkpoint. A history read in parts, oldest part
 * first, passes the same `seen` with each part.
 */
export function firstAppearances<M extends { id?: string }>(
  history: readonly { checkpointId: string; messages: readonly M[] }[],
  seen = new Set<string>(),
): { message: M; checkpointId: string }[] {
  const result: { message: M; checkpointId: string }[] = [];
  for (const state of history) {
    state.messages.forEach((message, index) => {
      // Ids are assigned by LangGraph's messages reducer; the position stands in for a missing one.
      const key = message.id ?? `#${index}`;
      if (seen.has(key)) return;
      seen.add(key);
      result.push({ message, checkpointId: state.checkpointId });
    });
  }
  return result;
}
