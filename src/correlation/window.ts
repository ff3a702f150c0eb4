// The correlation rule, once: a checkpoint belongs to the run whose window
// [startMark, endMark] holds its id, inclusive at both ends; a running run's
// window is open (endMark null). Runs of one conversation never overlap, so a
// checkpoint has at most one run. The same rule as SQL, for storage backends
// that select a window's checkpoints in the database; a property test holds the
// two to the same answers (the SQL is in sql.ts).

export interface RunWindow {
  startMark: string;
  /** Null while the run is running: the window is open. */
  endMark: string | null;
}

/**
 * Above every id: an open window's upper bound. A bound keeps a range scan of the
 * primary key bounded at both ends (`hi IS NULL OR id <= hi` would read to the
 * end of the thread).
 */
export const OPEN_WINDOW_END = "\u{10FFFF}";

/** Whether the window holds the checkpoint id. */
export function holds(window: RunWindow, checkpointId: string): boolean {
  return window.startMark <= checkpointId && checkpointId <= (window.endMark ?? OPEN_WINDOW_END);
}

/** Whether the run had started by the moment the id stands for. */
export function startedBy(window: RunWindow, id: string): boolean {
  return window.startMark <= id;
}
