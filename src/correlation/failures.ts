// Failed tasks: which run left each `__error__` write.
import { holds, type RunWindow } from "./window.ts";

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
