// The retention seam's SQL, written once for both engines: the placeholders
// (`?` in SQLite, `$n` in PostgreSQL) and the collation of checkpoint ids are
// the only differences. Checkpoint ids and marks compare by code point
// (src/correlation/sql.ts), so "a run's last checkpoint" is the greatest id its
// window holds, in either engine.
import { holdsSql, windowEndSql, type SqlDialect } from "../../correlation/index.ts";
import type { AgedTable, ExpiryPolicy } from "./types.ts";

/** A statement and its values, in the engine's placeholder style. */
export interface Statement {
  text: string;
  values: unknown[];
}

/** Collects values and answers each one's placeholder. */
class Params {
  readonly values: unknown[] = [];
  constructor(private readonly dialect: SqlDialect) {}
  add(value: unknown): string {
    this.values.push(value);
    return this.dialect === "postgres" ? `$${this.values.length}` : "?";
  }
}

/** Runs that have ended and will not run again (a waiting run is resumed, so it keeps its journal and events). */
export const ENDED = `('completed', 'failed', 'cancelled', 'interrupted')`;
const ACTIVE = `('queued', 'running')`;

/** Conversations due for deletion (RetentionStore.expiredConversations); dates as the engine stores them. */
export function expiredSql<D>(dialect: SqlDialect, policy: ExpiryPolicy, now: Date, limit: number, date: (d: Date) => D): Statement {
  const p = new Params(dialect);
  const day = 24 * 60 * 60 * 1000;
  const cutoff = (days: number) => date(new Date(now.getTime() - days * day));
  // SQLite's `?` bind in the order they appear: each value is added where the text uses it.
  const expired = `c.expires_at <= ${p.add(date(now))}`;
  const agents = Object.keys(policy.agentDays).sort();
  const idle = agents.map((agent) => `(c.agent = ${p.add(agent)} AND c.updated_at <= ${p.add(cutoff(policy.agentDays[agent]!))})`);
  if (policy.defaultDays !== null) {
    const others = agents.length ? `c.agent NOT IN (${agents.map((a) => p.add(a)).join(", ")}) AND ` : "";
    idle.push(`(${others}c.updated_at <= ${p.add(cutoff(policy.defaultDays))})`);
  }
  const text = `SELECT c.id FROM conversations c
    WHERE (${expired} OR (c.expires_at IS NULL AND (${idle.length ? idle.join(" OR ") : "1 = 0"})))
      AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.conversation_id = c.id AND r.status IN ${ACTIVE})
    ORDER BY c.updated_at, c.id LIMIT ${p.add(limit)}`;
  return { text, values: p.values };
}

/** Threads with more than `keep` root checkpoints (RetentionStore.threadsOverKeep). */
export function threadsOverKeepSql(dialect: SqlDialect, keep: number, after: string | null, limit: number): Statement {
  const p = new Params(dialect);
  const c = dialect === "postgres" ? ` COLLATE "C"` : "";
  const text = `SELECT thread_id FROM checkpoints WHERE checkpoint_ns = '' AND thread_id${c} > ${p.add(after ?? "")}
    GROUP BY thread_id HAVING count(*) > ${p.add(keep)} ORDER BY thread_id${c} LIMIT ${p.add(limit)}`;
  return { text, values: p.values };
}

/** The thread's prunable checkpoint ids, oldest first (RetentionStore.prunableCheckpoints). */
export function prunableSql(dialect: SqlDialect, threadId: string, keep: number, limit: number): Statement {
  const p = new Params(dialect);
  const c = dialect === "postgres" ? ` COLLATE "C"` : "";
  const t = () => p.add(threadId);
  // The thread as a parameter, not r.conversation_id: PostgreSQL then bounds the index scan by it.
  const lastInWindow = () => `(SELECT max(e.checkpoint_id${c}) FROM checkpoints e WHERE e.thread_id = ${t()} AND e.checkpoint_ns = ''
      AND ${holdsSql(dialect, "e.checkpoint_id", "r.start_mark", windowEndSql(dialect, "r.end_mark"))})`;
  const text = `WITH kept(id) AS (
      SELECT start_checkpoint_id FROM runs WHERE conversation_id = ${t()} AND start_checkpoint_id IS NOT NULL
      UNION SELECT ${lastInWindow()} FROM runs r WHERE r.conversation_id = ${t()}
      UNION SELECT forked_from_checkpoint_id FROM conversations WHERE forked_from_conversation_id = ${t()} AND forked_from_checkpoint_id IS NOT NULL
      UNION SELECT id FROM (SELECT checkpoint_id AS id FROM checkpoints WHERE thread_id = ${t()} AND checkpoint_ns = ''
        ORDER BY checkpoint_id${c} DESC LIMIT ${p.add(keep)}) latest
    )
    SELECT k.checkpoint_id AS id FROM checkpoints k
    WHERE k.thread_id = ${t()} AND k.checkpoint_ns = ''
      AND NOT EXISTS (SELECT 1 FROM runs a WHERE a.conversation_id = ${t()} AND a.status IN ${ACTIVE})
      AND NOT EXISTS (SELECT 1 FROM kept WHERE kept.id = k.checkpoint_id)
    ORDER BY k.checkpoint_id${c} LIMIT ${p.add(limit)}`;
  return { text, values: p.values };
}

/** The rows of `table` older than `before` (RetentionStore.countAged), as `FROM … WHERE …` and its key columns. */
function agedRows(table: AgedTable, p: Params, before: unknown): { from: string; key: string } {
  switch (table) {
    case "run_events":
      return {
        from: `run_events x JOIN runs r ON r.id = x.run_id WHERE r.status IN ${ENDED} AND r.finished_at < ${p.add(before)}`,
        key: "x.run_id, x.seq",
      };
    case "tool_calls":
      return {
        from: `tool_calls x JOIN runs r ON r.id = x.run_id WHERE r.status IN ${ENDED} AND r.finished_at < ${p.add(before)}`,
        key: "x.conversation_id, x.tool_call_id, x.attempt",
      };
    case "idempotency_keys":
      return { from: `idempotency_keys x WHERE x.created_at < ${p.add(before)}`, key: "x.principal, x.key" };
    case "webhook_deliveries":
      return { from: `webhook_deliveries x WHERE x.status <> 'pending' AND x.created_at < ${p.add(before)}`, key: "x.id" };
  }
}

const KEY_COLUMNS: Record<AgedTable, string> = {
  run_events: "run_id, seq",
  tool_calls: "conversation_id, tool_call_id, attempt",
  idempotency_keys: "principal, key",
  webhook_deliveries: "id",
};

export function countAgedSql(dialect: SqlDialect, table: AgedTable, before: unknown): Statement {
  const p = new Params(dialect);
  const { from } = agedRows(table, p, before);
  return { text: `SELECT count(*) AS n FROM ${from}`, values: p.values };
}

export function pruneAgedSql(dialect: SqlDialect, table: AgedTable, before: unknown, limit: number): Statement {
  const p = new Params(dialect);
  const { from, key } = agedRows(table, p, before);
  const text = `DELETE FROM ${table} WHERE (${KEY_COLUMNS[table]}) IN (SELECT ${key} FROM ${from} LIMIT ${p.add(limit)})`;
  return { text, values: p.values };
}
