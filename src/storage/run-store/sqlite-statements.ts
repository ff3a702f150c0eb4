// The run store's SQL on SQLite: every statement prepared once per connection,
// the writer's and the reader's, and the fragments they share. sqlite.ts runs
// them in its transactions.
import type { SqliteDatabase } from "../sqlite/database.ts";
import {
  CONVERSATION_COLUMNS,
  IDEMPOTENCY_COLUMNS,
  INTERRUPT_COLUMNS,
  RUN_COLUMNS,
  type ConversationRow,
  type IdempotencyRow,
  type InterruptRow,
  type OwnerRow,
  type RunRow,
} from "../sqlite/rows.ts";
import { lastMarkSql, laterEndMarkSql, recoveredEndMarkSql } from "../../correlation/index.ts";

/** The one-running-run-per-conversation index (or a primary key) refused the row. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: string })?.code;
  return code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY";
}

// Lists of ids travel as one JSON parameter, so each batch is one statement however many ids.
const IN_IDS = "IN (SELECT value FROM json_each(?))";
// A row an instance executes: running, or queued but held by the instance that paused it (requeueHeld).
const EXECUTING = `(status = 'running' OR (status = 'queued' AND owner_id IS NOT NULL))`;
// Executing rows whose owner is gone (listed) or was never registered; only a running row may lack an owner.
const ORPHANED = `${EXECUTING} AND ((owner_id IS NULL AND status = 'running') OR owner_id ${IN_IDS} OR owner_id NOT IN (SELECT id FROM run_owners))`;

// Multitask ENQUEUE: a run queued behind its conversation's active run is not
// that conversation's active run until a claim promotes it (the oldest first,
// once nothing else of the conversation is queued or running).
const BEHIND = `(queue_reason IS 'BEHIND_ACTIVE_RUN')`;
const NOT_BEHIND = `queue_reason IS NOT 'BEHIND_ACTIVE_RUN'`;
const PROMOTE_BEHIND = `UPDATE runs SET queue_reason = NULL WHERE id IN (
  SELECT b.id FROM runs b WHERE b.status = 'queued' AND b.queue_reason = 'BEHIND_ACTIVE_RUN'
    AND NOT EXISTS (SELECT 1 FROM runs a WHERE a.conversation_id = b.conversation_id AND a.status IN ('queued', 'running')
      AND a.queue_reason IS NOT 'BEHIND_ACTIVE_RUN')
    AND NOT EXISTS (SELECT 1 FROM runs e WHERE e.conversation_id = b.conversation_id AND e.status = 'queued' AND e.queue_reason = 'BEHIND_ACTIVE_RUN'
      AND (e.queued_at < b.queued_at OR (e.queued_at = b.queued_at AND e.id < b.id))))`;

export function writeStatements(db: SqliteDatabase) {
  return {
    insertConversation: db.prepare<[string, string, string, string, number, string, string | null, string | null, string | null]>(
      `INSERT INTO conversations (id, title, created_at, updated_at, message_count, agent, forked_from_conversation_id, forked_from_checkpoint_id, owner)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    touchConversation: db.prepare<[string, string]>(`UPDATE conversations SET updated_at = ? WHERE id = ?`),
    finishConversation: db.prepare<[string, number | null, string]>(
      `UPDATE conversations SET updated_at = ?, message_count = COALESCE(?, message_count) WHERE id = ?`,
    ),
    renameConversation: db.prepare<[string, string, string]>(`UPDATE conversations SET title = ?, updated_at = ? WHERE id = ?`),
    deleteConversation: db.prepare<[string]>(`DELETE FROM conversations WHERE id = ?`),
    getConversation: db.prepare<[string], ConversationRow>(`SELECT ${CONVERSATION_COLUMNS} FROM conversations WHERE id = ?`),
    insertRun: db.prepare(
      `INSERT INTO runs (id, conversation_id, kind, status, input, started_at, start_mark, owner_id, start_checkpoint_id, started_by, started_by_role,
         endpoint, queued_at, queue_reason, trace_parent, edit, last_event_seq)
       VALUES (@id, @conversationId, @kind, @status, @input, @startedAt, @startMark, @ownerId, @startCheckpointId, @startedBy, @startedByRole,
         @endpoint, @queuedAt, @queueReason, @traceParent, @edit, 0)`,
    ),
    // The queue, oldest first, and what executes now (claimQueued).
    queueCandidates: db.prepare<
      [number],
      {
        id: string;
        queued_at: string;
        endpoint: string | null;
        started_by: string | null;
        conversation_id: string;
        queue_reason: string | null;
        owner_id: string | null;
      }
    >(`SELECT id, queued_at, endpoint, started_by, conversation_id, queue_reason, owner_id FROM runs WHERE status = 'queued' AND ${NOT_BEHIND}
       ORDER BY queued_at, id LIMIT ?`),
    promoteBehind: db.prepare<[]>(PROMOTE_BEHIND),
    runningByEndpoint: db.prepare<[], { endpoint: string; n: number }>(
      `SELECT endpoint, count(*) AS n FROM runs WHERE status = 'running' AND endpoint IS NOT NULL GROUP BY endpoint`,
    ),
    runningByStarter: db.prepare<[string], { k: string; n: number }>(
      `SELECT COALESCE(started_by, conversation_id) AS k, count(*) AS n FROM runs
       WHERE status = 'running' AND COALESCE(started_by, conversation_id) ${IN_IDS} GROUP BY k`,
    ),
    // When each starter's latest admitted run was asked for (round robin; a queued run's queued_at is its started_at).
    lastServed: db.prepare<[string], { k: string; at: string | null }>(
      `SELECT k.value AS k, (SELECT max(started_at) FROM runs WHERE started_by = k.value AND status <> 'queued') AS at FROM json_each(?) k`,
    ),
    // Expired keys go before a key is recorded, so an old key can be used again and the table stays small.
    forgetExpiredKeys: db.prepare<[string]>(`DELETE FROM idempotency_keys WHERE created_at < ?`),
    insertKey: db.prepare(
      `INSERT OR IGNORE INTO idempotency_keys (principal, key, operation, request_hash, conversation_id, run_id, created_at)
       VALUES (@principal, @key, @operation, @requestHash, @conversationId, @runId, @createdAt)`,
    ),
    claimRun: db.prepare<[string, string]>(`UPDATE runs SET status = 'running', owner_id = ?, queue_reason = NULL WHERE id = ? AND status = 'queued'`),
    setQueueReason: db.prepare<[string, string]>(`UPDATE runs SET queue_reason = ? WHERE id = ? AND status = 'queued'`),
    requeueHeld: db.prepare<[string, string, string]>(
      `UPDATE runs SET status = 'queued', queue_reason = 'MODEL_BUSY', queued_at = ? WHERE id = ? AND status = 'running' AND owner_id = ?`,
    ),
    moveStart: db.prepare<[string, string | null, string]>(`UPDATE runs SET start_mark = ?, start_checkpoint_id = ? WHERE id = ? AND status = 'running'`),
    // A starter's running runs, and its writes since a moment (the quotas): the runs it
    // started (edits too), and its forks that started none with them (a fork's run
    // starts in the fork's own transaction, at the moment the conversation is created).
    quotaCounts: db.prepare<{ who: string; since: string }, { active: number; recent: number; oldest: string | null }>(
      `SELECT (SELECT count(*) FROM runs WHERE started_by = @who AND status IN ('queued', 'running')) AS active,
              count(*) AS recent, min(at) AS oldest
       FROM (
         SELECT started_at AS at FROM runs WHERE started_by = @who AND started_at > @since
         UNION ALL
         SELECT c.created_at FROM conversations c
         WHERE c.owner = @who AND c.forked_from_checkpoint_id IS NOT NULL AND c.created_at > @since
           AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.conversation_id = c.id AND r.started_at = c.created_at)
       )`,
    ),
    finishRun: db.prepare(
      `UPDATE runs SET status = @status, error_code = @errorCode, error_message = @errorMessage, partial_output = @partialOutput,
         finished_at = @finishedAt, end_mark = @endMark, last_event_seq = @lastEventSeq,
         input_tokens = @inputTokens, output_tokens = @outputTokens, model_calls = @modelCalls,
         time_to_first_token_ms = @timeToFirstTokenMs, model_duration_ms = @modelDurationMs,
         start_mark = CASE WHEN status = 'queued' AND owner_id IS NULL THEN COALESCE(@endMark, start_mark) ELSE start_mark END
       WHERE id = @id AND status IN ('queued', 'running')`,
    ),
    insertInterrupt: db.prepare<[string, string, string, string, string, string]>(
      `INSERT INTO interrupts (run_id, id, conversation_id, node, value, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
    ),
    linkFiring: db.prepare<[string, string, string]>(`UPDATE schedule_firings SET run_id = ? WHERE schedule_id = ? AND fire_at = ?`),
    answerInterrupt: db.prepare<[string, string, string, string, string]>(
      `UPDATE interrupts SET answered_by_run_id = ?, answer = ?, answered_at = ? WHERE conversation_id = ? AND id = ? AND answered_by_run_id IS NULL`,
    ),
    getRun: db.prepare<[string], RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE id = ?`),
    activeRun: db.prepare<[string], RunRow>(
      `SELECT ${RUN_COLUMNS} FROM runs WHERE conversation_id = ? AND status IN ('queued', 'running') ORDER BY ${BEHIND} ASC, queued_at, id LIMIT 1`,
    ),
    runsByIds: db.prepare<[string], RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE id ${IN_IDS}`),
    // Running rows whose owner is gone (listed) or was never registered.
    orphans: db.prepare<[string], RunRow>(
      `SELECT ${RUN_COLUMNS} FROM runs
       WHERE ${ORPHANED}`,
    ),
    interruptRun: db.prepare<[string, string, string, string]>(
      `UPDATE runs SET status = 'interrupted', error_code = 'INTERRUPTED', error_message = ?, finished_at = ?,
         end_mark = ${recoveredEndMarkSql("sqlite", "?", "runs.conversation_id")}
       WHERE id = ? AND ${EXECUTING}`,
    ),
    completeEndedElsewhere: db.prepare(
      `UPDATE runs SET last_event_seq = @lastEventSeq, partial_output = COALESCE(partial_output, @partialOutput), end_mark = ${laterEndMarkSql("sqlite", "@endMark")},
         input_tokens = CASE WHEN @hasUsage THEN @inputTokens ELSE input_tokens END,
         output_tokens = CASE WHEN @hasUsage THEN @outputTokens ELSE output_tokens END,
         model_calls = CASE WHEN @hasUsage THEN @modelCalls ELSE model_calls END,
         time_to_first_token_ms = CASE WHEN @hasUsage THEN @timeToFirstTokenMs ELSE time_to_first_token_ms END,
         model_duration_ms = CASE WHEN @hasUsage THEN @modelDurationMs ELSE model_duration_ms END
       WHERE id = @id AND status <> 'running'`,
    ),
    setMessageCount: db.prepare<[number, string]>(`UPDATE conversations SET message_count = ? WHERE id = ?`),
    setMessageCountOfRun: db.prepare<[number, string]>(`UPDATE conversations SET message_count = ? WHERE id = (SELECT conversation_id FROM runs WHERE id = ?)`),
    insertOwner: db.prepare<[string, number, string, string, string]>(
      `INSERT INTO run_owners (id, pid, host, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?)`,
    ),
    heartbeat: db.prepare<[string, string]>(`UPDATE run_owners SET heartbeat_at = ? WHERE id = ?`),
    deleteOwners: db.prepare<[string]>(`DELETE FROM run_owners WHERE id ${IN_IDS}`),
  };
}

/** A page of each listed conversation's runs (oldest first), numbered per conversation; the cursor, when given, starts the count. */
function pageSql(direction: "ASC" | "DESC", fromCursor: boolean): string {
  const order = `r.started_at ${direction}, r.id ${direction}`;
  if (!fromCursor) {
    return `SELECT * FROM (SELECT ${RUN_COLUMNS}, ROW_NUMBER() OVER (PARTITION BY conversation_id ORDER BY ${order}) AS position
      FROM runs r WHERE conversation_id ${IN_IDS}) WHERE position > ? AND position <= ? ORDER BY conversation_id, position`;
  }
  const compare = direction === "ASC" ? ">=" : "<=";
  return `SELECT * FROM (SELECT ${RUN_COLUMNS.replace(/(\w+)/g, "r.$1")}, ROW_NUMBER() OVER (ORDER BY ${order}) AS position
      FROM runs r, (SELECT conversation_id AS c, started_at AS s, id AS i FROM runs WHERE id = ?) k
      WHERE r.conversation_id = k.c AND r.conversation_id ${IN_IDS} AND (r.started_at, r.id) ${compare} (k.s, k.i))
    WHERE position > ? AND position <= ? ORDER BY position`;
}

export function readStatements(db: SqliteDatabase) {
  return {
    getConversation: db.prepare<[string], ConversationRow>(`SELECT ${CONVERSATION_COLUMNS} FROM conversations WHERE id = ?`),
    getRun: db.prepare<[string], RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE id = ?`),
    activeRun: db.prepare<[string], RunRow>(
      `SELECT ${RUN_COLUMNS} FROM runs WHERE conversation_id = ? AND status IN ('queued', 'running') ORDER BY ${BEHIND} ASC, queued_at, id LIMIT 1`,
    ),
    idempotencyKey: db.prepare<[string, string, string], IdempotencyRow>(
      `SELECT ${IDEMPOTENCY_COLUMNS} FROM idempotency_keys WHERE principal = ? AND key = ? AND created_at >= ?`,
    ),
    anyQueued: db.prepare<[], { one: number }>(`SELECT 1 AS one FROM runs WHERE status = 'queued' LIMIT 1`),
    notRunning: db.prepare<[string], { id: string }>(`SELECT id FROM runs WHERE id ${IN_IDS} AND NOT ${EXECUTING}`),
    orphans: db.prepare<[string], RunRow>(
      `SELECT ${RUN_COLUMNS} FROM runs
       WHERE ${ORPHANED}`,
    ),
    listOwners: db.prepare<[], OwnerRow>(`SELECT id, pid, host, started_at, heartbeat_at FROM run_owners`),
    lastMark: db.prepare<{ id: string }, { m: string | null }>(`SELECT ${lastMarkSql("sqlite", "@id")} AS m`),
    conversations: db.prepare<[string], ConversationRow>(`SELECT ${CONVERSATION_COLUMNS} FROM conversations WHERE id ${IN_IDS}`),
    runs: db.prepare<[string], RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE id ${IN_IDS}`),
    // The run each conversation keeps comes last (keyRows keeps the last row per key).
    activeRuns: db.prepare<[string], RunRow>(
      `SELECT ${RUN_COLUMNS} FROM runs WHERE conversation_id ${IN_IDS} AND status IN ('queued', 'running') ORDER BY ${BEHIND} DESC, queued_at DESC, id DESC`,
    ),
    queuePositions: db.prepare<[string], { id: string; position: number }>(
      `SELECT r.id, (SELECT count(*) FROM runs q WHERE q.status = 'queued' AND q.endpoint IS r.endpoint
         AND (q.queued_at < r.queued_at OR (q.queued_at = r.queued_at AND q.id <= r.id))) AS position
       FROM runs r WHERE r.id ${IN_IDS} AND r.status = 'queued'`,
    ),
    latestRuns: db.prepare<[string], RunRow>(
      `SELECT ${RUN_COLUMNS} FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY conversation_id ORDER BY started_at DESC, id DESC) AS position
         FROM runs WHERE conversation_id ${IN_IDS}) WHERE position = 1`,
    ),
    runsOf: db.prepare<[string], RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE conversation_id ${IN_IDS} ORDER BY conversation_id, start_mark`),
    interruptsOf: db.prepare<[string], InterruptRow>(
      `SELECT ${INTERRUPT_COLUMNS} FROM interrupts WHERE conversation_id ${IN_IDS} ORDER BY conversation_id, created_at, rowid`,
    ),
    usageOf: db.prepare<[string], { conversation_id: string; i: number; o: number; c: number; d: number }>(
      `SELECT conversation_id, COALESCE(sum(input_tokens), 0) AS i, COALESCE(sum(output_tokens), 0) AS o, COALESCE(sum(model_calls), 0) AS c,
         COALESCE(sum(model_duration_ms), 0) AS d FROM runs WHERE conversation_id ${IN_IDS} GROUP BY conversation_id`,
    ),
    runCounts: db.prepare<[string], { conversation_id: string; n: number }>(
      `SELECT conversation_id, count(*) AS n FROM runs WHERE conversation_id ${IN_IDS} GROUP BY conversation_id`,
    ),
    pageForward: db.prepare<[string, number, number], RunRow>(pageSql("ASC", false)),
    pageBackward: db.prepare<[string, number, number], RunRow>(pageSql("DESC", false)),
    pageForwardFrom: db.prepare<[string, string, number, number], RunRow>(pageSql("ASC", true)),
    pageBackwardFrom: db.prepare<[string, string, number, number], RunRow>(pageSql("DESC", true)),
  };
}
