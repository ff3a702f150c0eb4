// The correlation's ordering rules as SQL, for storage backends that apply them
// in the database: which checkpoints a window holds, the latest mark a
// conversation has recorded, where a recovered run's window ends, and that an end
// mark only ever moves later. Marks and checkpoint ids compare by code point in
// both dialects (SQLite's BINARY collation; PostgreSQL with COLLATE "C").
// test/conformance/correlation-sql.ts holds each engine to the TypeScript rules.

export type SqlDialect = "sqlite" | "postgres";

const collate = (dialect: SqlDialect) => (dialect === "postgres" ? ` COLLATE "C"` : "");

/** The greater of two marks (SQLite's scalar max, PostgreSQL's GREATEST). */
function greatest(dialect: SqlDialect, a: string, b: string): string {
  return dialect === "postgres" ? `GREATEST(${a} COLLATE "C", ${b} COLLATE "C")` : `max(${a}, ${b})`;
}

/**
 * `holds` in SQL: `id` is a column or expression, `lo` and `hi` the window's marks
 * (hi already coalesced to OPEN_WINDOW_END). Strings compare by code point in
 * both backends (SQLite's BINARY collation; Postgres with COLLATE "C").
 */
export function holdsSql(dialect: SqlDialect, id: string, lo: string, hi: string): string {
  const c = collate(dialect);
  return `(${id}${c} >= ${lo}${c} AND ${id}${c} <= ${hi}${c})`;
}

/** The upper bound of a window in SQL: its end mark, or OPEN_WINDOW_END when open. */
export function windowEndSql(dialect: SqlDialect, endMark: string): string {
  return dialect === "postgres" ? `coalesce(${endMark}, chr(1114111))` : `coalesce(${endMark}, char(1114111))`;
}

/** The newest checkpoint id of the thread `threadId` names (null for none). */
export function threadHeadSql(dialect: SqlDialect, threadId: string): string {
  return `(SELECT max(checkpoint_id${collate(dialect)}) FROM checkpoints WHERE thread_id = ${threadId} AND checkpoint_ns = '')`;
}

/**
 * The latest moment a conversation has recorded: the greatest of its runs'
 * marks and its thread's checkpoint ids (null for none). A new run's start mark
 * must come after it (marks.ts, mintMarkAfter). `conversationId` is a parameter.
 */
export function lastMarkSql(dialect: SqlDialect, conversationId: string): string {
  const runs = `(SELECT max(${greatest(dialect, "start_mark", "COALESCE(end_mark, '')")}) FROM runs WHERE conversation_id = ${conversationId})`;
  const head = threadHeadSql(dialect, conversationId);
  // SQLite's max() is null if an argument is; PostgreSQL's GREATEST skips nulls.
  return dialect === "postgres" ? `GREATEST(${runs}, ${head})` : `(SELECT max(m) FROM (SELECT ${runs} AS m UNION ALL SELECT ${head}))`;
}

/**
 * Where a recovered run's window ends: the recovering instance's mark, or its
 * thread's newest checkpoint when that is later (the instance that recovers may
 * have a clock behind the one that ran), so its last checkpoints stay its own.
 */
export function recoveredEndMarkSql(dialect: SqlDialect, endMark: string, conversationIdColumn: string): string {
  return greatest(dialect, endMark, `COALESCE(${threadHeadSql(dialect, conversationIdColumn)}, '')`);
}

/** An end mark set again only moves later, never earlier: the window keeps what it held. */
export function laterEndMarkSql(dialect: SqlDialect, proposed: string): string {
  return greatest(dialect, "COALESCE(end_mark, '')", proposed);
}
