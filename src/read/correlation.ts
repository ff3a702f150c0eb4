// The run → checkpoint edge, drawn by timestamp correlation. Nothing in a
// checkpoint names a run; each run row keeps a start and an end mark taken from
// the same time-ordered UUID v6 generator LangGraph uses for checkpoint_id, so
// comparing the strings compares the moments, finer than a millisecond. A
// checkpoint belongs to the run whose [startMark, endMark ?? +infinity] holds its
// id, inclusive at both ends. Runs of one conversation never overlap.

export interface RunWindow {
  startMark: string;
  /** Null while the run is running: the window is open. */
  endMark: string | null;
}

function holds(run: RunWindow, id: string): boolean {
  return run.startMark <= id && (run.endMark === null || id <= run.endMark);
}

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
    while (i + 1 < runs.length && runs[i + 1]!.startMark <= id) i += 1;
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
    if (runs[mid]!.startMark <= id) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  const run = found >= 0 ? runs[found]! : null;
  return run !== null && holds(run, id) ? run : null;
}

export interface AttemptWindow extends RunWindow {
  status: string;
  errorMessage: string | null;
}

/**
 * The run that left each `__error__` write. LangGraph records a failed task's
 * error against the checkpoint the task ran from (C), and a later failure of the
 * same pending step replaces it; a cancelled attempt usually writes nothing. The
 * attempts on C's pending step are the runs still running at C that started
 * before the thread's next checkpoint (C'), less the run that produced C' (it
 * got past the step, or replaced it with new input). Of those, latest first: the
 * failed run whose recorded error is this one, else a failed or running run,
 * else the latest attempt. `checkpointIds` and `errors` ascending by checkpoint;
 * O(R + K + E·a), a being the attempts on one step.
 */
export function attributeFailures<R extends AttemptWindow>(
  runs: readonly R[],
  checkpointIds: readonly string[],
  errors: readonly { checkpointId: string; message: string }[],
): (R | null)[] {
  const result: (R | null)[] = [];
  let k = 0; // index of C in checkpointIds
  let j = -1; // the last run started before C'
  for (const { checkpointId: id, message } of errors) {
    while (k < checkpointIds.length && checkpointIds[k]! < id) k += 1;
    if (checkpointIds[k] !== id) {
      result.push(null); // the checkpoint is gone: nothing to attribute against
      continue;
    }
    const nextId = checkpointIds[k + 1] ?? null;
    while (j + 1 < runs.length && (nextId === null || runs[j + 1]!.startMark < nextId)) j += 1;
    const attempts: R[] = [];
    for (let i = j; i >= 0; i -= 1) {
      const run = runs[i]!;
      if (run.endMark !== null && run.endMark < id) break; // ended before C: so did every earlier run
      if (nextId !== null && holds(run, nextId)) continue;
      attempts.push(run);
    }
    result.push(
      attempts.find((r) => r.status === "failed" && r.errorMessage !== null && r.errorMessage.startsWith(message)) ??
        attempts.find((r) => r.status === "failed" || r.status === "running") ??
        attempts[0] ??
        null,
    );
  }
  return result;
}

/** Messages in the order they first appear across a thread's history (oldest checkpoint first), with that checkpoint. */
export function firstAppearances<M extends { id?: string }>(
  history: readonly { checkpointId: string; messages: readonly M[] }[],
): { message: M; checkpointId: string }[] {
  const seen = new Set<string>();
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
