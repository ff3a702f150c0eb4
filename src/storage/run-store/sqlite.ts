// The run store on the SQLite file, with statements prepared once. Writes go
// through the writer connection, each one synchronous transaction begun
// IMMEDIATE (it holds the write lock from its first statement, so another
// process's commit cannot make it fail with SQLITE_BUSY_SNAPSHOT), taken in its
// turn of the write gate. Reads go through the reader connection.
import { NotFoundError, RunInProgressError } from "../../domain/errors.ts";
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
import type { SqliteDatabase } from "../sqlite/database.ts";
import type { WriteGate } from "../sqlite/write-gate.ts";
import { formatSqliteDate, parseSqliteDate, toConversationRecord, toIdempotencyRecord, toInterruptRecord, toOwnerRecord, toRunRecord } from "../sqlite/rows.ts";
import type { PageQuery } from "../page.ts";
import { groupRows, keyRows, valueRows } from "../batch.ts";
import { QUOTA_WINDOW_MS, quotaRefusal } from "./quota.ts";
import { noUsage, toUsage } from "./usage.ts";
import { IDEMPOTENCY_TTL_MS, IdempotencyKeyTakenError, type ClaimRequest, type EndedElsewhereFacts, type RunStore } from "./types.ts";
import { CLAIM_SCAN, chooseClaims } from "./queue.ts";
import { isUniqueViolation, readStatements, writeStatements } from "./sqlite-statements.ts";
import { sqliteOutbox, type SqliteOutbox } from "../outbox/sqlite.ts";

export class SqliteRunStore implements RunStore {
  readonly #writer: SqliteDatabase;
  readonly #gate: WriteGate;
  readonly #w: ReturnType<typeof writeStatements>;
  readonly #outbox: SqliteOutbox;
  readonly #r: ReturnType<typeof readStatements>;
  readonly #deleteThread: (threadId: string) => void;
  readonly #dropCheckpointsAfter: (threadId: string, keepThrough: string | null) => void;

  /**
   * `writer` and `reader` are connections to the migrated file; `gate` orders
   * every write of the writer connection; `deleteThread` removes a LangGraph
   * thread synchronously inside the caller's transaction (the saver knows its tables).
   */
  constructor(options: {
    writer: SqliteDatabase;
    reader: SqliteDatabase;
    gate: WriteGate;
    deleteThread: (threadId: string) => void;
    dropCheckpointsAfter: (threadId: string, keepThrough: string | null) => void;
  }) {
    this.#dropCheckpointsAfter = options.dropCheckpointsAfter;
    this.#writer = options.writer;
    this.#gate = options.gate;
    this.#deleteThread = options.deleteThread;
    this.#w = writeStatements(options.writer);
    this.#outbox = sqliteOutbox(options.writer);
    this.#r = readStatements(options.reader);
  }

  /** One write transaction, BEGIN IMMEDIATE, in its turn. */
  #write<T>(work: () => T): Promise<T> {
    return this.#gate.run(() => this.#writer.transaction(work).immediate());
  }

  async startRun(run: NewRun, newConversation?: NewConversation): Promise<{ run: RunRecord; conversation: ConversationRecord }> {
    const w = this.#w;
    const startedAt = formatSqliteDate(run.startedAt);
    try {
      return await this.#write(() => {
        // Inside the write transaction: no other process's start can come between the count and the insert.
        if (run.quota && run.startedBy != null) this.#refuseBeyond(run.quota, run.startedBy, run.startedAt);
        if (newConversation) {
          const { title, agent, forkedFrom } = newConversation;
          w.insertConversation.run(
            run.conversationId,
            title,
            startedAt,
            startedAt,
            newConversation.messageCount ?? 0,
            agent,
            forkedFrom?.conversationId ?? null,
            forkedFrom?.checkpointId ?? null,
            newConversation.owner,
          );
          this.#recordKeyOf(run);
        } else {
          if (w.touchConversation.run(startedAt, run.conversationId).changes === 0) throw new NotFoundError("Conversation", run.conversationId);
          this.#recordKeyOf(run);
        }
        const queued = run.endpoint != null;
        // Runs waiting behind the active one count as active too: nothing jumps their line.
        const ahead = newConversation ? undefined : w.activeRun.get(run.conversationId);
        const behind = ahead !== undefined && queued && run.behind === true;
        if (ahead && !behind) throw new RunInProgressError(run.conversationId, ahead.id);
        w.insertRun.run({
          id: run.id,
          conversationId: run.conversationId,
          kind: run.kind,
          status: queued ? "queued" : "running",
          input: run.input,
          startedAt,
          startMark: run.startMark,
          ownerId: queued ? null : run.ownerId,
          startCheckpointId: run.startCheckpointId,
          startedBy: run.startedBy ?? null,
          startedByRole: run.startedByRole ?? null,
          endpoint: run.endpoint ?? null,
          queuedAt: queued ? startedAt : null,
          queueReason: behind ? "BEHIND_ACTIVE_RUN" : null,
          traceParent: run.traceParent ?? null,
          edit: run.edit ? JSON.stringify(run.edit) : null,
        });
        for (const { interruptId, value } of run.answers ?? [])
          w.answerInterrupt.run(run.id, JSON.stringify(value ?? null), startedAt, run.conversationId, interruptId);
        this.#outbox.recordTargets(run.id, run.webhooks);
        if (run.firing) w.linkFiring.run(run.id, run.firing.scheduleId, formatSqliteDate(run.firing.fireAt));
        return { run: toRunRecord(w.getRun.get(run.id)!), conversation: toConversationRecord(w.getConversation.get(run.conversationId)!) };
      });
    } catch (error) {
      if (isUniqueViolation(error)) {
        const active = await this.activeRun(run.conversationId);
        throw new RunInProgressError(run.conversationId, active?.id ?? null);
      }
      throw error;
    }
  }

  finishRun(runId: string, outcome: RunOutcome): Promise<RunRecord | null> {
    const w = this.#w;
    const finishedAt = formatSqliteDate(outcome.finishedAt);
    return this.#write(() => {
      const { status, errorCode, errorMessage, partialOutput, endMark, lastEventSeq, usage } = outcome;
      const changed = w.finishRun.run({ id: runId, status, errorCode, errorMessage, partialOutput, finishedAt, endMark, lastEventSeq, ...usage }).changes;
      if (changed === 0) return null;
      const run = toRunRecord(w.getRun.get(runId)!);
      for (const i of outcome.interrupts) w.insertInterrupt.run(runId, i.id, run.conversationId, i.node, JSON.stringify(i.value ?? null), finishedAt);
      w.finishConversation.run(finishedAt, outcome.messageCount, run.conversationId);
      this.#outbox.recordEnd(run, outcome.interrupts, outcome.finishedAt);
      return run;
    });
  }

  /** Throws the refusal `quota` calls for, as `who`'s writes stand at `at`. */
  #refuseBeyond(quota: RunQuota, who: string, at: Date): void {
    const counts = this.#w.quotaCounts.get({ who, since: formatSqliteDate(new Date(at.getTime() - QUOTA_WINDOW_MS)) })!;
    const refusal = quotaRefusal(quota, { ...counts, oldestRecent: counts.oldest === null ? null : parseSqliteDate(counts.oldest) }, at);
    if (refusal) throw refusal;
  }

  async checkQuota(who: string, quota: RunQuota, at: Date): Promise<void> {
    this.#refuseBeyond(quota, who, at);
  }

  createConversation(id: string, conversation: NewConversation, at: Date, quota?: RunQuota): Promise<ConversationRecord> {
    const w = this.#w;
    const when = formatSqliteDate(at);
    return this.#write(() => {
      if (quota && conversation.owner !== null) this.#refuseBeyond(quota, conversation.owner, at);
      w.insertConversation.run(
        id,
        conversation.title,
        when,
        when,
        conversation.messageCount ?? 0,
        conversation.agent,
        conversation.forkedFrom?.conversationId ?? null,
        conversation.forkedFrom?.checkpointId ?? null,
        conversation.owner,
      );
      return toConversationRecord(w.getConversation.get(id)!);
    });
  }

  renameConversation(id: string, title: string, at: Date): Promise<ConversationRecord> {
    const w = this.#w;
    return this.#write(() => {
      if (w.renameConversation.run(title, formatSqliteDate(at), id).changes === 0) throw new NotFoundError("Conversation", id);
      return toConversationRecord(w.getConversation.get(id)!);
    });
  }

  async deleteConversation(id: string): Promise<ConversationRecord> {
    const w = this.#w;
    try {
      return await this.#write(() => {
        const row = w.getConversation.get(id);
        if (!row) throw new NotFoundError("Conversation", id);
        const active = w.activeRun.get(id);
        if (active) throw new RunInProgressError(id, active.id);
        // The thread goes in the same transaction: a crash cannot leave a conversation without its thread, or the reverse.
        this.#deleteThread(id);
        w.deleteConversation.run(id); // its runs go by ON DELETE CASCADE
        return toConversationRecord(row);
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw new RunInProgressError(id, null);
      throw error;
    }
  }

  async completeEndedElsewhere(runId: string, facts: EndedElsewhereFacts): Promise<void> {
    const { lastEventSeq, partialOutput, endMark, usage } = facts;
    const recorded = usage ?? { inputTokens: null, outputTokens: null, modelCalls: null, timeToFirstTokenMs: null, modelDurationMs: null };
    await this.#write(() => {
      this.#w.completeEndedElsewhere.run({ id: runId, lastEventSeq, partialOutput, endMark, hasUsage: usage ? 1 : 0, ...recorded });
      if (facts.messageCount != null) this.#w.setMessageCountOfRun.run(facts.messageCount, runId);
    });
  }

  async recordMessageCounts(messageCounts: ReadonlyMap<string, number>): Promise<void> {
    if (messageCounts.size === 0) return;
    await this.#write(() => {
      for (const [conversationId, count] of messageCounts) this.#w.setMessageCount.run(count, conversationId);
    });
  }

  /** Inside startRun's transaction: the run's idempotency key (after its conversation exists, which the key refers to). */
  #recordKeyOf(run: NewRun): void {
    if (!run.idempotency) return;
    this.#insertKey({ ...run.idempotency, conversationId: run.conversationId, runId: run.id });
  }

  #insertKey(record: IdempotencyRecord): void {
    this.#w.forgetExpiredKeys.run(formatSqliteDate(new Date(record.createdAt.getTime() - IDEMPOTENCY_TTL_MS)));
    const { principal, key, operation, requestHash, conversationId, runId } = record;
    const inserted = this.#w.insertKey.run({ principal, key, operation, requestHash, conversationId, runId, createdAt: formatSqliteDate(record.createdAt) });
    if (inserted.changes === 0) throw new IdempotencyKeyTakenError(principal, key);
  }

  async rollBackThread(conversationId: string, keepThrough: string | null): Promise<void> {
    await this.#write(() => {
      if (this.#w.activeRun.get(conversationId)) throw new RunInProgressError(conversationId, this.#w.activeRun.get(conversationId)!.id);
      this.#dropCheckpointsAfter(conversationId, keepThrough);
    });
  }

  async idempotencyKey(principal: string, key: string, since: Date): Promise<IdempotencyRecord | null> {
    const row = this.#r.idempotencyKey.get(principal, key, formatSqliteDate(since));
    return row ? toIdempotencyRecord(row) : null;
  }

  async recordIdempotencyKey(record: IdempotencyRecord): Promise<void> {
    await this.#write(() => this.#insertKey(record));
  }

  async anyQueued(): Promise<boolean> {
    return this.#r.anyQueued.get() !== undefined;
  }

  async claimQueued(request: ClaimRequest): Promise<RunRecord[]> {
    const w = this.#w;
    // Most looks find nothing queued: they cost a read, not a write transaction.
    if (!this.#r.anyQueued.get()) return [];
    return this.#write(() => {
      w.promoteBehind.run();
      const rows = w.queueCandidates.all(CLAIM_SCAN);
      if (rows.length === 0) return [];
      const candidates = rows.map((r) => ({
        id: r.id,
        queuedAt: parseSqliteDate(r.queued_at),
        endpoint: r.endpoint,
        fairnessKey: r.started_by ?? r.conversation_id,
        queueReason: r.queue_reason,
        heldBy: r.owner_id,
      }));
      const byEndpoint = new Map(w.runningByEndpoint.all().map((r) => [r.endpoint, r.n] as const));
      const keys = JSON.stringify([...new Set(candidates.map((c) => c.fairnessKey))]);
      const byKey = new Map(w.runningByStarter.all(keys).map((r) => [r.k, r.n] as const));
      const served = new Map(w.lastServed.all(keys).flatMap((r) => (r.at === null ? [] : [[r.k, parseSqliteDate(r.at).getTime()] as const])));
      const choice = chooseClaims(request, candidates, byEndpoint, byKey, served);
      for (const { id, reason } of choice.reasons) w.setQueueReason.run(reason, id);
      for (const id of choice.claim) w.claimRun.run(request.ownerId, id);
      return choice.claim.length ? w.runsByIds.all(JSON.stringify(choice.claim)).map(toRunRecord) : [];
    });
  }

  async requeueHeld(runId: string, ownerId: string, at: Date): Promise<boolean> {
    return this.#write(() => this.#w.requeueHeld.run(formatSqliteDate(at), runId, ownerId).changes > 0);
  }

  async queuePositions(runIds: readonly string[]): Promise<Map<string, number>> {
    if (runIds.length === 0) return new Map();
    return keyRows(
      this.#r.queuePositions.all(JSON.stringify(runIds)),
      (row) => row.id,
      (row) => row.position,
    );
  }

  async registerOwner(owner: OwnerRecord): Promise<void> {
    await this.#write(() => this.#w.insertOwner.run(owner.id, owner.pid, owner.host, formatSqliteDate(owner.startedAt), formatSqliteDate(owner.heartbeatAt)));
  }

  async heartbeat(ownerId: string, at: Date): Promise<void> {
    await this.#write(() => this.#w.heartbeat.run(formatSqliteDate(at), ownerId));
  }

  async removeOwner(ownerId: string): Promise<void> {
    await this.#write(() => this.#w.deleteOwners.run(JSON.stringify([ownerId])));
  }

  async listOwners(): Promise<OwnerRecord[]> {
    return this.#r.listOwners.all().map(toOwnerRecord);
  }

  async runsOfGoneOwners(goneOwnerIds: string[]): Promise<RunRecord[]> {
    return this.#r.orphans.all(JSON.stringify(goneOwnerIds)).map(toRunRecord);
  }

  interruptRunsOfGoneOwners(
    goneOwnerIds: string[],
    at: Date,
    endMark: string,
    message: string,
    messageCounts: ReadonlyMap<string, number>,
  ): Promise<RunRecord[]> {
    const w = this.#w;
    const finishedAt = formatSqliteDate(at);
    const gone = JSON.stringify(goneOwnerIds);
    return this.#write(() => {
      const orphans = w.orphans.all(gone);
      for (const run of orphans) w.interruptRun.run(message, finishedAt, endMark, run.id);
      for (const conversationId of new Set(orphans.map((r) => r.conversation_id)))
        w.finishConversation.run(finishedAt, messageCounts.get(conversationId) ?? null, conversationId);
      if (goneOwnerIds.length) w.deleteOwners.run(gone);
      const recovered = orphans.length ? w.runsByIds.all(JSON.stringify(orphans.map((r) => r.id))).map(toRunRecord) : [];
      for (const run of recovered) this.#outbox.recordEnd(run, [], at);
      return recovered;
    });
  }

  async moveStart(runId: string, startMark: string, startCheckpointId: string | null): Promise<void> {
    await this.#write(() => this.#w.moveStart.run(startMark, startCheckpointId, runId));
  }

  async getConversation(id: string): Promise<ConversationRecord | null> {
    const row = this.#r.getConversation.get(id);
    return row ? toConversationRecord(row) : null;
  }

  async lastMark(conversationId: string): Promise<string | null> {
    return this.#r.lastMark.get({ id: conversationId })?.m || null;
  }

  async getRun(id: string): Promise<RunRecord | null> {
    const row = this.#r.getRun.get(id);
    return row ? toRunRecord(row) : null;
  }

  async activeRun(conversationId: string): Promise<RunRecord | null> {
    const row = this.#r.activeRun.get(conversationId);
    return row ? toRunRecord(row) : null;
  }

  async notRunning(runIds: string[]): Promise<string[]> {
    if (runIds.length === 0) return [];
    return this.#r.notRunning.all(JSON.stringify(runIds)).map((r) => r.id);
  }

  async conversations(ids: readonly string[]): Promise<Map<string, ConversationRecord>> {
    if (ids.length === 0) return new Map();
    return keyRows(this.#r.conversations.all(JSON.stringify(ids)), (row) => row.id, toConversationRecord);
  }

  async runs(ids: readonly string[]): Promise<Map<string, RunRecord>> {
    if (ids.length === 0) return new Map();
    return keyRows(this.#r.runs.all(JSON.stringify(ids)), (row) => row.id, toRunRecord);
  }

  async activeRuns(conversationIds: readonly string[]): Promise<Map<string, RunRecord>> {
    if (conversationIds.length === 0) return new Map();
    return keyRows(this.#r.activeRuns.all(JSON.stringify(conversationIds)), (row) => row.conversation_id, toRunRecord);
  }

  async latestRuns(conversationIds: readonly string[]): Promise<Map<string, RunRecord>> {
    if (conversationIds.length === 0) return new Map();
    return keyRows(this.#r.latestRuns.all(JSON.stringify(conversationIds)), (row) => row.conversation_id, toRunRecord);
  }

  async runsOf(conversationIds: readonly string[]): Promise<Map<string, RunRecord[]>> {
    const rows = conversationIds.length ? this.#r.runsOf.all(JSON.stringify(conversationIds)) : [];
    return groupRows(conversationIds, rows, (row) => row.conversation_id, toRunRecord);
  }

  async runPages(conversationIds: readonly string[], { cursor, skip, take }: PageQuery): Promise<Map<string, RunRecord[]>> {
    if (conversationIds.length === 0 || take === 0) return groupRows(conversationIds, [], () => "", toRunRecord);
    const r = this.#r;
    const ids = JSON.stringify(conversationIds);
    const upTo = skip + Math.abs(take);
    const rows =
      take > 0
        ? cursor !== undefined
          ? r.pageForwardFrom.all(cursor, ids, skip, upTo)
          : r.pageForward.all(ids, skip, upTo)
        : cursor !== undefined
          ? r.pageBackwardFrom.all(cursor, ids, skip, upTo)
          : r.pageBackward.all(ids, skip, upTo);
    const result = groupRows(conversationIds, rows, (row) => row.conversation_id, toRunRecord);
    // Read backwards from the end; each page itself is in list order.
    if (take < 0) for (const list of result.values()) list.reverse();
    return result;
  }

  async interruptsOf(conversationIds: readonly string[]): Promise<Map<string, InterruptRecord[]>> {
    const rows = conversationIds.length ? this.#r.interruptsOf.all(JSON.stringify(conversationIds)) : [];
    return groupRows(conversationIds, rows, (row) => row.conversation_id, toInterruptRecord);
  }

  async usageOf(conversationIds: readonly string[]): Promise<Map<string, Usage>> {
    const rows = conversationIds.length ? this.#r.usageOf.all(JSON.stringify(conversationIds)) : [];
    return valueRows(conversationIds, rows, (r) => r.conversation_id, toUsage, noUsage);
  }

  async runCounts(conversationIds: readonly string[]): Promise<Map<string, number>> {
    const rows = conversationIds.length ? this.#r.runCounts.all(JSON.stringify(conversationIds)) : [];
    return valueRows(
      conversationIds,
      rows,
      (row) => row.conversation_id,
      (row) => row.n,
      () => 0,
    );
  }
}
