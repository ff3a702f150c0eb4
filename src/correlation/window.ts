// The correlation rule, once: a checkpoint belongs to the run whose window
// [startMark, endMark] holds its id, inclusive at both ends; a running run's
// window is open (endMark null). Runs of one conversation never overlap, so a
// checkpoint has at most one run. The same rule as SQL, for storage backends
// that select a window's checkpoints in the database; a property test holds the
// two to the same answers.

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

/**
 * `holds` in SQL: `id` is a column or expression, `lo` and `hi` the window's marks
 * (hi already coalesced to OPEN_WINDOW_END). Strings compare by code point in
 * both backends (SQLite's BINARY collation; Postgres with COLLATE "C").
 */
export function holdsSql(dialect: "sqlite" | "postgres", id: string, lo: string, hi: string): string {
  const c = dialect === "postgres" ? ` COLLATE "C"` : "";
  return `(${id}${c} >= ${lo}${c} AND ${id}${c} <= ${hi}${c})`;
}

/** The upper bound of a window in SQL: its end mark, or OPEN_WINDOW_END when open. */
export function windowEndSql(dialect: "sqlite" | "postgres", endMark: string): string {
  return dialect === "postgres" ? `coalesce(${endMark}, chr(1114111))` : `coalesce(${endMark}, char(1114111))`;
}
