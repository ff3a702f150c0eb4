// The run store on PostgreSQL. Each write is one transaction on one pooled connection; the database's unique
// index keeps one running run per conversation across every instance. Statements are named, so each connection prepares each once.
import { NotFoundError, RunInProgressError, type QuotaExceededError } from "../../domain/errors.ts";
import type {
  ConversationRecord,
  IdempotencyRecord,
  InterruptRecord,
  NewConversation,
  NewRun,
  OwnerRecord,
  RunOutcome,
  RunQuota,
  RunRecord,
  Usage,
} from "../../domain/records.ts";
import { inTransaction, isUniqueViolation, type PostgresClient, type PostgresPool } from "../postgres/database.ts";
import {
  CONVERSATION_COLUMNS,
  IDEMPOTENCY_COLUMNS,
  INTERRUPT_COLUMNS,
  RUN_COLUMNS,
  toConversationRecord,
  toIdempotencyRecord,
  toInterruptRecord,
  toOwnerRecord,
  toRunRecord,
  type ConversationRow,
  type IdempotencyRow,
  type InterruptRow,
  type OwnerRow,
  type RunRow,
} from "../postgres/rows.ts";
import type { PageQuery } from "../page.ts";
import { lastMarkSql, laterEndMarkSql, recoveredEndMarkSql } from "../../correlation/index.ts";
import { groupRows, keyRows, valueRows } from "../batch.ts";
import { QUOTA_WINDOW_MS, quotaRefusal } from "./quota.ts";
import { noUsage, toUsage, type UsageRow } from "./usage.ts";
import { IDEMPOTENCY_TTL_MS, IdempotencyKeyTakenError, type ClaimRequest, type EndedElsewhereFacts, type RunStore } from "./types.ts";
import { recordWebhookEnd, recordWebhookTargets } from "../outbox/postgres.ts";
import { CLAIM_SCAN, chooseClaims } from "./queue.ts";

const R = RUN_COLUMNS.replace(/(\w+)/g, "r.$1");

/** A page of each listed conversation's runs (oldest first), numbered per conversation; the cursor, when given, starts the count. */
function pageSql(direction: "ASC" | "DESC", fromCursor: boolean): string {
  const order = `r.started_at ${direction}, r.id ${direction}`;
  if (!fromCursor) {
    return `SELECT * FROM (SELECT ${R}, ROW_NUMBER() OVER (PARTITION BY r.conversation_id ORDER BY ${order}) AS position
      FROM runs r WHERE r.conversation_id = ANY($1)) p WHERE position > $2 AND position <= $3 ORDER BY conversation_id, position`;
  }
  const compare = direction === "ASC" ? ">=" : "<=";
  return `SELECT * FROM (SELECT ${R}, ROW_NUMBER() OVER (ORDER BY ${order}) AS position
      FROM runs r, (SELECT conversation_id AS c, started_at AS s, id AS i FROM runs WHERE id = $4) k
      WHERE r.conversation_id = k.c AND r.conversation_id = ANY($1) AND (r.started_at, r.id) ${compare} (k.s, k.i)) p
    WHERE position > $2 AND position <= $3 ORDER BY position`;
}

// Multitask ENQUEUE: a run queued behind its conversation's active run is not that conversation's active run
// until a claim promotes it (the oldest first, once nothing else of the conversation is queued or running).
const BEHIND = `(queue_reason IS NOT DISTINCT FROM 'BEHIND_ACTIVE_RUN')`;

// A row an instance executes: running, or queued but held by the instance that paused it (requeueHeld).
const EXECUTING = `(status = 'running' OR (status = 'queued' AND owner_id IS NOT NULL))`;
// Executing rows whose owner is gone (listed) or was never registered; only a running row may lack an owner.
const orphaned = (gone: string) =>
  `${EXECUTING} AND ((owner_id IS NULL AND status = 'running') OR owner_id = ANY(${gone}) OR owner_id NOT IN (SELECT id FROM run_owners))`;

const SQL = {
  insertConversation: `INSERT INTO conversations (id, title, created_at, updated_at, message_count, agent, forked_from_conversation_id, forked_from_checkpoint_id, owner)
    VALUES ($1, $2, $3, $3, $7, $4, $5, $6, $8)`,
  touchConversation: `UPDATE conversations SET updated_at = $1 WHERE id = $2`,
  finishConversation: `UPDATE conversations SET updated_at = $1, message_count = COALESCE($2, message_count) WHERE id = $3`,
  renameConversation: `UPDATE conversations SET title = $1, updated_at = $2 WHERE id = $3 RETURNING ${CONVERSATION_COLUMNS}`,
  getConversation: `SELECT ${CONVERSATION_COLUMNS} FROM conversations WHERE id = $1`,
  lockConversation: `SELECT ${CONVERSATION_COLUMNS} FROM conversations WHERE id = $1 FOR UPDATE`,
  deleteConversation: `DELETE FROM conversations WHERE id = $1`,
  insertRun: `INSERT INTO runs (id, conversation_id, kind, status, input, started_at, start_mark, owner_id, start_checkpoint_id, started_by,
      started_by_role, endpoint, queued_at, queue_reason, trace_parent, edit, last_event_seq)
    VALUES ($1, $2, $3, $10, $4, $5, $6, $7, $8, $9, $11, $12, $13, $14, $15, $16, 0) RETURNING ${RUN_COLUMNS}`,
  // Claims take turns (a transaction-scoped lock), so the counts of running runs hold until the claim commits.
  forgetExpiredKeys: `DELETE FROM idempotency_keys WHERE created_at < $1`,
  insertKey: `INSERT INTO idempotency_keys (principal, key, operation, request_hash, conversation_id, run_id, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING RETURNING principal`,
  idempotencyKey: `SELECT ${IDEMPOTENCY_COLUMNS} FROM idempotency_keys
    WHERE principal = $1 AND key = $2 AND created_at >= $3`,
  anyQueued: `SELECT 1 AS one FROM runs WHERE status = 'queued' LIMIT 1`,
  lockQueue: `SELECT pg_advisory_xact_lock(hashtextextended('runledger:queue', 0))`,
  // A row a cancel is changing right now is skipped, not waited for.
  queueCandidates: `SELECT id, queued_at, endpoint, started_by, conversation_id, queue_reason, owner_id FROM runs WHERE status = 'queued' AND NOT ${BEHIND}
    ORDER BY queued_at, id LIMIT $1 FOR UPDATE SKIP LOCKED`,
  promoteBehind: `UPDATE runs SET queue_reason = NULL WHERE id IN (
      SELECT b.id FROM runs b WHERE b.status = 'queued' AND b.queue_reason = 'BEHIND_ACTIVE_RUN'
        AND NOT EXISTS (SELECT 1 FROM runs a WHERE a.conversation_id = b.conversation_id AND a.status IN ('queued', 'running')
          AND a.queue_reason IS DISTINCT FROM 'BEHIND_ACTIVE_RUN')
        AND NOT EXISTS (SELECT 1 FROM runs e WHERE e.conversation_id = b.conversation_id AND e.status = 'queued' AND e.queue_reason = 'BEHIND_ACTIVE_RUN'
          AND (e.queued_at, e.id) < (b.queued_at, b.id)))`,
  moveStart: `UPDATE runs SET start_mark = $1, start_checkpoint_id = $2 WHERE id = $3 AND status = 'running'`,
  runningByEndpoint: `SELECT endpoint, count(*)::int AS n FROM runs WHERE status = 'running' AND endpoint IS NOT NULL GROUP BY endpoint`,
  runningByStarter: `SELECT COALESCE(started_by, conversation_id) AS k, count(*)::int AS n FROM runs
    WHERE status = 'running' AND COALESCE(started_by, conversation_id) = ANY($1) GROUP BY 1`,
  // When each starter's latest admitted run was asked for (round robin; a queued run's queued_at is its started_at).
  // Per starter (runs_served_idx): the newest admitted run, not the starter's whole history.
  lastServed: `SELECT k, (SELECT max(started_at) FROM runs WHERE started_by = k AND status <> 'queued') AS at FROM unnest($1::text[]) AS k`,
  claimRuns: `UPDATE runs SET status = 'running', owner_id = $1, queue_reason = NULL WHERE id = ANY($2) AND status = 'queued' RETURNING ${RUN_COLUMNS}`,
  requeueHeld: `UPDATE runs SET status = 'queued', queue_reason = 'MODEL_BUSY', queued_at = $1 WHERE id = $2 AND status = 'running' AND owner_id = $3 RETURNING id`,
  setQueueReasons: `UPDATE runs SET queue_reason = v.reason FROM unnest($1::text[], $2::text[]) AS v(id, reason) WHERE runs.id = v.id AND runs.status = 'queued'`,
  queuePositions: `SELECT r.id, (SELECT count(*) FROM runs q WHERE q.status = 'queued' AND q.endpoint IS NOT DISTINCT FROM r.endpoint
      AND (q.queued_at, q.id) <= (r.queued_at, r.id))::int AS position
    FROM runs r WHERE r.id = ANY($1) AND r.status = 'queued'`,
  // One starter's starts take turns (a transaction-scoped lock on its id), so the counts below hold until the insert commits.
  lockStarter: `SELECT pg_advisory_xact_lock(hashtextextended('runledger:quota:' || $1, 0))`,
  // The starter's running runs, and its writes since $2: the runs it started (edits too), and its forks
  // that started none with them (a fork's run starts in the fork's own transaction, at the moment the conversation is created).
  quotaCounts: `SELECT (SELECT count(*) FROM runs WHERE started_by = $1 AND status IN ('queued', 'running'))::int AS active,
      count(*)::int AS recent, min(at) AS oldest
    FROM (
      SELECT started_at AS at FROM runs WHERE started_by = $1 AND started_at > $2
      UNION ALL
      SELECT c.created_at FROM conversations c
      WHERE c.owner = $1 AND c.forked_from_checkpoint_id IS NOT NULL AND c.created_at > $2
        AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.conversation_id = c.id AND r.started_at = c.created_at)
    ) AS writes`,
  finishRun: `UPDATE runs SET status = $1, error_code = $2, error_message = $3, partial_output = $4, finished_at = $5, end_mark = $6, last_event_seq = $7,
      input_tokens = $9, output_tokens = $10, model_calls = $11, time_to_first_token_ms = $12, model_duration_ms = $13,
      start_mark = CASE WHEN status = 'queued' AND owner_id IS NULL THEN COALESCE($6, start_mark) ELSE start_mark END
    WHERE id = $8 AND status IN ('queued', 'running') RETURNING ${RUN_COLUMNS}`,
  insertInterrupt: `INSERT INTO interrupts (run_id, id, conversation_id, node, value, created_at) VALUES ($1, $2, $3, $4, $5::jsonb, $6)`,
  linkFiring: `UPDATE schedule_firings SET run_id = $1 WHERE schedule_id = $2 AND fire_at = $3`,
  answerInterrupt: `UPDATE interrupts SET answered_by_run_id = $1, answer = $2::jsonb, answered_at = $3 WHERE conversation_id = $4 AND id = $5 AND answered_by_run_id IS NULL`,
  interruptsOf: `SELECT ${INTERRUPT_COLUMNS} FROM interrupts WHERE conversation_id = ANY($1) ORDER BY conversation_id, created_at, position`,
  getRun: `SELECT ${RUN_COLUMNS} FROM runs WHERE id = $1`,
  activeRun: `SELECT ${RUN_COLUMNS} FROM runs WHERE conversation_id = $1 AND status IN ('queued', 'running') ORDER BY ${BEHIND}, queued_at, id LIMIT 1`,
  // Running rows whose owner is gone (listed) or was never registered; RETURNING gives only
  // the rows this transaction changed, so two instances sweeping at once report each run once.
  interruptOrphans: `UPDATE runs SET status = 'interrupted', error_code = 'INTERRUPTED', error_message = $1, finished_at = $2,
      end_mark = ${recoveredEndMarkSql("postgres", "$3", "runs.conversation_id")}
    WHERE ${orphaned("$4")}
    RETURNING ${RUN_COLUMNS}`,
  orphans: `SELECT ${RUN_COLUMNS} FROM runs
    WHERE ${orphaned("$1")}`,
  setMessageCount: `UPDATE conversations SET message_count = $1 WHERE id = $2`,
  setMessageCountOfRun: `UPDATE conversations SET message_count = $1 WHERE id = (SELECT conversation_id FROM runs WHERE id = $2)`,
  completeEndedElsewhere: `UPDATE runs SET last_event_seq = $1, partial_output = COALESCE(partial_output, $2), end_mark = ${laterEndMarkSql("postgres", "$3")},
      input_tokens = CASE WHEN $5::boolean THEN $6::integer ELSE input_tokens END,
      output_tokens = CASE WHEN $5::boolean THEN $7::integer ELSE output_tokens END,
      model_calls = CASE WHEN $5::boolean THEN $8::integer ELSE model_calls END,
      time_to_first_token_ms = CASE WHEN $5::boolean THEN $9::integer ELSE time_to_first_token_ms END,
      model_duration_ms = CASE WHEN $5::boolean THEN $10::integer ELSE model_duration_ms END
    WHERE id = $4 AND status <> 'running'`,
  insertOwner: `INSERT INTO run_owners (id, pid, host, started_at, heartbeat_at) VALUES ($1, $2, $3, $4, $5)`,
  heartbeat: `UPDATE run_owners SET heartbeat_at = $1 WHERE id = $2`,
  deleteOwners: `DELETE FROM run_owners WHERE id = ANY($1)`,
  listOwners: `SELECT id, pid, host, started_at, heartbeat_at FROM run_owners`,
  lastMark: `SELECT ${lastMarkSql("postgres", "$1")} AS m`,
  notRunning: `SELECT id FROM runs WHERE id = ANY($1) AND NOT ${EXECUTING}`,
  conversations: `SELECT ${CONVERSATION_COLUMNS} FROM conversations WHERE id = ANY($1)`,
  runs: `SELECT ${RUN_COLUMNS} FROM runs WHERE id = ANY($1)`,
  // The run each conversation keeps comes last (keyRows keeps the last row per key).
  activeRuns: `SELECT ${RUN_COLUMNS} FROM runs WHERE conversation_id = ANY($1) AND status IN ('queued', 'running')
    ORDER BY ${BEHIND} DESC, queued_at DESC, id DESC`,
  latestRuns: `SELECT DISTINCT ON (conversation_id) ${RUN_COLUMNS} FROM runs WHERE conversation_id = ANY($1) ORDER BY conversation_id, started_at DESC, id DESC`,
  runsOf: `SELECT ${RUN_COLUMNS} FROM runs WHERE conversation_id = ANY($1) ORDER BY conversation_id, start_mark`,
  runCounts: `SELECT conversation_id, count(*)::int AS n FROM runs WHERE conversation_id = ANY($1) GROUP BY conversation_id`,
  usageOf: `SELECT conversation_id, COALESCE(sum(input_tokens), 0)::int AS i, COALESCE(sum(output_tokens), 0)::int AS o, COALESCE(sum(model_calls), 0)::int AS c,
      COALESCE(sum(model_duration_ms), 0)::int AS d FROM runs WHERE conversation_id = ANY($1) GROUP BY conversation_id`,
  createConversation: `INSERT INTO conversations (id, title, created_at, updated_at, message_count, agent, forked_from_conversation_id, forked_from_checkpoint_id, owner)
    VALUES ($1, $2, $3, $3, $7, $4, $5, $6, $8) RETURNING ${CONVERSATION_COLUMNS}`,
  pageForward: pageSql("ASC", false),
  pageBackward: pageSql("DESC", false),
  pageForwardFrom: pageSql("ASC", true),
  pageBackwardFrom: pageSql("DESC", true),
} as const;

type Statement = keyof typeof SQL;

export class PostgresRunStore implements RunStore {
  readonly #pool: PostgresPool;
  readonly #deleteThread: (client: PostgresClient, threadId: string) => Promise<void>;
  readonly #dropCheckpointsAfter: (client: PostgresClient, threadId: string, keepThrough: string | null) => Promise<void>;

  /** `deleteThread` removes a LangGraph thread inside the caller's transaction (the saver knows its tables). */
  constructor(options: {
    pool: PostgresPool;
    deleteThread: (client: PostgresClient, threadId: string) => Promise<void>;
    dropCheckpointsAfter: (client: PostgresClient, threadId: string, keepThrough: string | null) => Promise<void>;
  }) {
    this.#dropCheckpointsAfter = options.dropCheckpointsAfter;
    this.#pool = options.pool;
    this.#deleteThread = options.deleteThread;
  }

  async #query<Row extends object>(on: PostgresPool | PostgresClient, name: Statement, values: unknown[]): Promise<Row[]> {
    return (await on.query<Row>({ name: `runledger_${name}`, text: SQL[name], values })).rows;
  }

  async startRun(run: NewRun, newConversation?: NewConversation): Promise<{ run: RunRecord; conversation: ConversationRecord }> {
    try {
      return await inTransaction(this.#pool, async (client) => {
        if (run.quota && run.startedBy != null) await this.#refuseBeyond(client, run.quota, run.startedBy, run.startedAt);
        if (newConversation) {
          const { title, agent, forkedFrom } = newConversation;
          await this.#query(client, "insertConversation", [
            run.conversationId,
            title,
            run.startedAt,
            agent,
            forkedFrom?.conversationId ?? null,
            forkedFrom?.checkpointId ?? null,
            newConversation.messageCount ?? 0,
            newConversation.owner,
          ]);
        } else if (
          (await client.query({ name: "runledger_touchConversation", text: SQL.touchConversation, values: [run.startedAt, run.conversationId] })).rowCount === 0
        ) {
          throw new NotFoundError("Conversation", run.conversationId);
        }
        if (run.idempotency) await this.#insertKey(client, { ...run.idempotency, conversationId: run.conversationId, runId: run.id });
        // Runs waiting behind the active one count as active too: nothing jumps their line. Every
        // start on the conversation holds its row (touched above) until commit, so this read holds.
        const [ahead] = newConversation ? [] : await this.#query<RunRow>(client, "activeRun", [run.conversationId]);
        const behind = ahead !== undefined && run.endpoint != null && run.behind === true;
        if (ahead && !behind) throw new RunInProgressError(run.conversationId, ahead.id);
        const [row] = await this.#query<RunRow>(client, "insertRun", [
          run.id,
          run.conversationId,
          run.kind,
          run.input,
          run.startedAt,
          run.startMark,
          run.endpoint != null ? null : run.ownerId,
          run.startCheckpointId,
          run.startedBy ?? null,
          run.endpoint != null ? "queued" : "running",
          run.startedByRole ?? null,
          run.endpoint ?? null,
          run.endpoint != null ? run.startedAt : null,
          behind ? "BEHIND_ACTIVE_RUN" : null,
          run.traceParent ?? null,
          run.edit ? JSON.stringify(run.edit) : null,
        ]);
        for (const { interruptId, value } of run.answers ?? []) {
          await this.#query(client, "answerInterrupt", [run.id, JSON.stringify(value ?? null), run.startedAt, run.conversationId, interruptId]);
        }
        await recordWebhookTargets(client, run.id, run.webhooks);
        if (run.firing) await this.#query(client, "linkFiring", [run.id, run.firing.scheduleId, run.firing.fireAt]);
        const [conversation] = await this.#query<ConversationRow>(client, "getConversation", [run.conversationId]);
        return { run: toRunRecord(row!), conversation: toConversationRecord(conversation!) };
      });
    } catch (error) {
      if (isUniqueViolation(error)) {
        const active = await this.activeRun(run.conversationId);
        throw new RunInProgressError(run.conversationId, active?.id ?? null);
      }
      throw error;
    }
  }

  async #insertKey(client: PostgresClient, record: IdempotencyRecord): Promise<void> {
    await this.#query(client, "forgetExpiredKeys", [new Date(record.createdAt.getTime() - IDEMPOTENCY_TTL_MS)]);
    const { principal, key, operation, requestHash, conversationId, runId, createdAt } = record;
    // A concurrent call with the same key waits here for the other's commit, then finds the key taken.
    const inserted = await this.#query(client, "insertKey", [principal, key, operation, requestHash, conversationId, runId, createdAt]);
    if (inserted.length === 0) throw new IdempotencyKeyTakenError(principal, key);
  }

  async rollBackThread(conversationId: string, keepThrough: string | null): Promise<void> {
    await inTransaction(this.#pool, async (client) => {
      // The conversation's row lock keeps a start out until the checkpoints are gone.
      await this.#query(client, "lockConversation", [conversationId]);
      const [active] = await this.#query<RunRow>(client, "activeRun", [conversationId]);
      if (active) throw new RunInProgressError(conversationId, active.id);
      await this.#dropCheckpointsAfter(client, conversationId, keepThrough);
    });
  }

  async idempotencyKey(principal: string, key: string, since: Date): Promise<IdempotencyRecord | null> {
    const [row] = await this.#query<IdempotencyRow>(this.#pool, "idempotencyKey", [principal, key, since]);
    return row ? toIdempotencyRecord(row) : null;
  }

  async recordIdempotencyKey(record: IdempotencyRecord): Promise<void> {
    await inTransaction(this.#pool, (client) => this.#insertKey(client, record));
  }

  async anyQueued(): Promise<boolean> {
    return (await this.#query(this.#pool, "anyQueued", [])).length > 0;
  }

  async claimQueued(request: ClaimRequest): Promise<RunRecord[]> {
    // Most looks find nothing queued: they cost a read, not a locking transaction.
    if (!(await this.anyQueued())) return [];
    return inTransaction(this.#pool, async (client) => {
      await this.#query(client, "lockQueue", []);
      // A start that came in meanwhile may have taken the conversation (a unique violation): that run goes first.
      await client.query("SAVEPOINT promote");
      await this.#query(client, "promoteBehind", []).then(
        () => client.query("RELEASE SAVEPOINT promote"),
        async (error: unknown) => {
          if (!isUniqueViolation(error)) throw error;
          await client.query("ROLLBACK TO SAVEPOINT promote");
        },
      );
      const rows = await this.#query<{
        id: string;
        queued_at: Date;
        endpoint: string | null;
        started_by: string | null;
        conversation_id: string;
        queue_reason: string | null;
        owner_id: string | null;
      }>(client, "queueCandidates", [CLAIM_SCAN]);
      if (rows.length === 0) return [];
      const candidates = rows.map((r) => ({
        id: r.id,
        queuedAt: r.queued_at,
        endpoint: r.endpoint,
        fairnessKey: r.started_by ?? r.conversation_id,
        queueReason: r.queue_reason,
        heldBy: r.owner_id,
      }));
      const byEndpoint = new Map((await this.#query<{ endpoint: string; n: number }>(client, "runningByEndpoint", [])).map((r) => [r.endpoint, r.n] as const));
      const keys = [...new Set(candidates.map((c) => c.fairnessKey))];
      const byKey = new Map((await this.#query<{ k: string; n: number }>(client, "runningByStarter", [keys])).map((r) => [r.k, r.n] as const));
      const served = new Map(
        (await this.#query<{ k: string; at: Date | null }>(client, "lastServed", [keys])).flatMap((r) =>
          r.at === null ? [] : [[r.k, r.at.getTime()] as const],
        ),
      );
      const choice = chooseClaims(request, candidates, byEndpoint, byKey, served);
      if (choice.reasons.length) await this.#query(client, "setQueueReasons", [choice.reasons.map((r) => r.id), choice.reasons.map((r) => r.reason)]);
      if (choice.claim.length === 0) return [];
      return (await this.#query<RunRow>(client, "claimRuns", [request.ownerId, choice.claim])).map(toRunRecord);
    });
  }

  async requeueHeld(runId: string, ownerId: string, at: Date): Promise<boolean> {
    // RETURNING: the rows this update changed.
    return (await this.#query(this.#pool, "requeueHeld", [at, runId, ownerId])).length > 0;
  }

  async moveStart(runId: string, startMark: string, startCheckpointId: string | null): Promise<void> {
    await this.#query(this.#pool, "moveStart", [startMark, startCheckpointId, runId]);
  }

  async queuePositions(runIds: readonly string[]): Promise<Map<string, number>> {
    if (runIds.length === 0) return new Map();
    const rows = await this.#query<{ id: string; position: number }>(this.#pool, "queuePositions", [runIds]);
    return keyRows(
      rows,
      (row) => row.id,
      (row) => row.position,
    );
  }

  finishRun(runId: string, outcome: RunOutcome): Promise<RunRecord | null> {
    return inTransaction(this.#pool, async (client) => {
      const { status, errorCode, errorMessage, partialOutput, finishedAt, endMark, lastEventSeq, usage } = outcome;
      const [row] = await this.#query<RunRow>(client, "finishRun", [
        status,
        errorCode,
        errorMessage,
        partialOutput,
        finishedAt,
        endMark,
        lastEventSeq,
        runId,
        usage.inputTokens,
        usage.outputTokens,
        usage.modelCalls,
        usage.timeToFirstTokenMs,
        usage.modelDurationMs,
      ]);
      if (!row) return null;
      for (const i of outcome.interrupts)
        await this.#query(client, "insertInterrupt", [runId, i.id, row.conversation_id, i.node, JSON.stringify(i.value ?? null), finishedAt]);
      await this.#query(client, "finishConversation", [finishedAt, outcome.messageCount, row.conversation_id]);
      const run = toRunRecord(row);
      await recordWebhookEnd(client, run, outcome.interrupts, finishedAt);
      return run;
    });
  }

  /** The refusal `quota` calls for, as `who`'s writes stand at `at`; null when the write may go ahead. */
  async #refusal(on: PostgresPool | PostgresClient, quota: RunQuota, who: string, at: Date): Promise<QuotaExceededError | null> {
    const since = new Date(at.getTime() - QUOTA_WINDOW_MS);
    const [counts] = await this.#query<{ active: number; recent: number; oldest: Date | null }>(on, "quotaCounts", [who, since]);
    return quotaRefusal(quota, { ...counts!, oldestRecent: counts!.oldest }, at);
  }

  /** In a write's transaction: takes the starter's lock (its other writes wait until this one commits), then throws any refusal. */
  async #refuseBeyond(client: PostgresClient, quota: RunQuota, who: string, at: Date): Promise<void> {
    await this.#query(client, "lockStarter", [who]);
    const refusal = await this.#refusal(client, quota, who, at);
    if (refusal) throw refusal;
  }

  async checkQuota(who: string, quota: RunQuota, at: Date): Promise<void> {
    const refusal = await this.#refusal(this.#pool, quota, who, at);
    if (refusal) throw refusal;
  }

  async createConversation(id: string, conversation: NewConversation, at: Date, quota?: RunQuota): Promise<ConversationRecord> {
    const owner = conversation.owner;
    if (!quota || owner === null) return this.#insertConversation(this.#pool, id, conversation, at);
    // The count and the insert in one transaction, as for a start.
    return inTransaction(this.#pool, async (client) => {
      await this.#refuseBeyond(client, quota, owner, at);
      return this.#insertConversation(client, id, conversation, at);
    });
  }

  async #insertConversation(on: PostgresPool | PostgresClient, id: string, conversation: NewConversation, at: Date): Promise<ConversationRecord> {
    const { title, agent, forkedFrom, messageCount = 0, owner } = conversation;
    const [row] = await this.#query<ConversationRow>(on, "createConversation", [
      id,
      title,
      at,
      agent,
      forkedFrom?.conversationId ?? null,
      forkedFrom?.checkpointId ?? null,
      messageCount,
      owner,
    ]);
    return toConversationRecord(row!);
  }

  async renameConversation(id: string, title: string, at: Date): Promise<ConversationRecord> {
    const [row] = await this.#query<ConversationRow>(this.#pool, "renameConversation", [title, at, id]);
    if (!row) throw new NotFoundError("Conversation", id);
    return toConversationRecord(row);
  }

  async deleteConversation(id: string): Promise<ConversationRecord> {
    try {
      return await inTransaction(this.#pool, async (client) => {
        // Locked, so a run cannot start on it between the check and the delete.
        const [row] = await this.#query<ConversationRow>(client, "lockConversation", [id]);
        if (!row) throw new NotFoundError("Conversation", id);
        const [active] = await this.#query<RunRow>(client, "activeRun", [id]);
        if (active) throw new RunInProgressError(id, active.id);
        // The thread goes in the same transaction: a crash cannot leave a conversation without its thread, or the reverse.
        await this.#deleteThread(client, id);
        await this.#query(client, "deleteConversation", [id]); // its runs go by ON DELETE CASCADE
        return toConversationRecord(row);
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw new RunInProgressError(id, null);
      throw error;
    }
  }

  async completeEndedElsewhere(runId: string, facts: EndedElsewhereFacts): Promise<void> {
    const { usage } = facts;
    await inTransaction(this.#pool, async (client) => {
      await this.#query(client, "completeEndedElsewhere", [
        facts.lastEventSeq,
        facts.partialOutput,
        facts.endMark,
        runId,
        usage !== undefined,
        usage?.inputTokens ?? null,
        usage?.outputTokens ?? null,
        usage?.modelCalls ?? null,
        usage?.timeToFirstTokenMs ?? null,
        usage?.modelDurationMs ?? null,
      ]);
      if (facts.messageCount != null) await this.#query(client, "setMessageCountOfRun", [facts.messageCount, runId]);
    });
  }

  async recordMessageCounts(messageCounts: ReadonlyMap<string, number>): Promise<void> {
    if (messageCounts.size === 0) return;
    await inTransaction(this.#pool, async (client) => {
      for (const [conversationId, count] of messageCounts) await this.#query(client, "setMessageCount", [count, conversationId]);
    });
  }

  async registerOwner(owner: OwnerRecord): Promise<void> {
    await this.#query(this.#pool, "insertOwner", [owner.id, owner.pid, owner.host, owner.startedAt, owner.heartbeatAt]);
  }

  async heartbeat(ownerId: string, at: Date): Promise<void> {
    await this.#query(this.#pool, "heartbeat", [at, ownerId]);
  }

  async removeOwner(ownerId: string): Promise<void> {
    await this.#query(this.#pool, "deleteOwners", [[ownerId]]);
  }

  async listOwners(): Promise<OwnerRecord[]> {
    return (await this.#query<OwnerRow>(this.#pool, "listOwners", [])).map(toOwnerRecord);
  }

  async runsOfGoneOwners(goneOwnerIds: string[]): Promise<RunRecord[]> {
    return (await this.#query<RunRow>(this.#pool, "orphans", [goneOwnerIds])).map(toRunRecord);
  }

  interruptRunsOfGoneOwners(
    goneOwnerIds: string[],
    at: Date,
    endMark: string,
    message: string,
    messageCounts: ReadonlyMap<string, number>,
  ): Promise<RunRecord[]> {
    return inTransaction(this.#pool, async (client) => {
      const rows = await this.#query<RunRow>(client, "interruptOrphans", [message, at, endMark, goneOwnerIds]);
      for (const conversationId of new Set(rows.map((r) => r.conversation_id))) {
        await this.#query(client, "finishConversation", [at, messageCounts.get(conversationId) ?? null, conversationId]);
      }
      if (goneOwnerIds.length) await this.#query(client, "deleteOwners", [goneOwnerIds]);
      const recovered = rows.map(toRunRecord);
      for (const run of recovered) await recordWebhookEnd(client, run, [], at);
      return recovered;
    });
  }

  async getConversation(id: string): Promise<ConversationRecord | null> {
    const [row] = await this.#query<ConversationRow>(this.#pool, "getConversation", [id]);
    return row ? toConversationRecord(row) : null;
  }

  async lastMark(conversationId: string): Promise<string | null> {
    const [row] = await this.#query<{ m: string | null }>(this.#pool, "lastMark", [conversationId]);
    return row?.m || null;
  }

  async getRun(id: string): Promise<RunRecord | null> {
    const [row] = await this.#query<RunRow>(this.#pool, "getRun", [id]);
    return row ? toRunRecord(row) : null;
  }

  async activeRun(conversationId: string): Promise<RunRecord | null> {
    const [row] = await this.#query<RunRow>(this.#pool, "activeRun", [conversationId]);
    return row ? toRunRecord(row) : null;
  }

  async notRunning(runIds: string[]): Promise<string[]> {
    if (runIds.length === 0) return [];
    return (await this.#query<{ id: string }>(this.#pool, "notRunning", [runIds])).map((r) => r.id);
  }

  async conversations(ids: readonly string[]): Promise<Map<string, ConversationRecord>> {
    if (ids.length === 0) return new Map();
    return keyRows(await this.#query<ConversationRow>(this.#pool, "conversations", [ids]), (row) => row.id, toConversationRecord);
  }

  async runs(ids: readonly string[]): Promise<Map<string, RunRecord>> {
    if (ids.length === 0) return new Map();
    return keyRows(await this.#query<RunRow>(this.#pool, "runs", [ids]), (row) => row.id, toRunRecord);
  }

  async activeRuns(conversationIds: readonly string[]): Promise<Map<string, RunRecord>> {
    if (conversationIds.length === 0) return new Map();
    return keyRows(await this.#query<RunRow>(this.#pool, "activeRuns", [conversationIds]), (row) => row.conversation_id, toRunRecord);
  }

  async latestRuns(conversationIds: readonly string[]): Promise<Map<string, RunRecord>> {
    if (conversationIds.length === 0) return new Map();
    return keyRows(await this.#query<RunRow>(this.#pool, "latestRuns", [conversationIds]), (row) => row.conversation_id, toRunRecord);
  }

  async runsOf(conversationIds: readonly string[]): Promise<Map<string, RunRecord[]>> {
    const rows = conversationIds.length ? await this.#query<RunRow>(this.#pool, "runsOf", [conversationIds]) : [];
    return groupRows(conversationIds, rows, (row) => row.conversation_id, toRunRecord);
  }

  async runPages(conversationIds: readonly string[], { cursor, skip, take }: PageQuery): Promise<Map<string, RunRecord[]>> {
    if (conversationIds.length === 0 || take === 0) return groupRows(conversationIds, [], () => "", toRunRecord);
    const upTo = skip + Math.abs(take);
    const name: Statement = take > 0 ? (cursor !== undefined ? "pageForwardFrom" : "pageForward") : cursor !== undefined ? "pageBackwardFrom" : "pageBackward";
    const values: unknown[] = [conversationIds, skip, upTo];
    if (cursor !== undefined) values.push(cursor);
    const result = groupRows(conversationIds, await this.#query<RunRow>(this.#pool, name, values), (row) => row.conversation_id, toRunRecord);
    // Read backwards from the end; each page itself is in list order.
    if (take < 0) for (const list of result.values()) list.reverse();
    return result;
  }

  async interruptsOf(conversationIds: readonly string[]): Promise<Map<string, InterruptRecord[]>> {
    const rows = conversationIds.length ? await this.#query<InterruptRow>(this.#pool, "interruptsOf", [conversationIds]) : [];
    return groupRows(conversationIds, rows, (row) => row.conversation_id, toInterruptRecord);
  }

  async usageOf(conversationIds: readonly string[]): Promise<Map<string, Usage>> {
    const rows = conversationIds.length ? await this.#query<UsageRow>(this.#pool, "usageOf", [conversationIds]) : [];
    return valueRows(conversationIds, rows, (r) => r.conversation_id, toUsage, noUsage);
  }

  async runCounts(conversationIds: readonly string[]): Promise<Map<string, number>> {
    const rows = conversationIds.length ? await this.#query<{ conversation_id: string; n: number }>(this.#pool, "runCounts", [conversationIds]) : [];
    return valueRows(
      conversationIds,
      rows,
      (row) => row.conversation_id,
      (row) => row.n,
      () => 0,
    );
  }
}
