// Schedules in the SQLite file: writes on the writer connection, each in its
// turn of the write gate; reads on the reader. A claim is one transaction of
// compare-and-swap updates (`next_run_at = ? WHERE id = ? AND next_run_at = ?`),
// so another process on the same file that read the same due row claims nothing
// (and BEGIN IMMEDIATE takes the write lock before the due rows are read).
import { encodeWebhookEvents } from "../../domain/webhooks.ts";
import type { SqliteDatabase } from "../sqlite/database.ts";
import { formatSqliteDate, parseSqliteDate } from "../sqlite/rows.ts";
import type { WriteGate } from "../sqlite/write-gate.ts";
import type { PageQuery } from "../page.ts";
import { FIRING_COLUMNS, SCHEDULE_COLUMNS, toFiringRecord, toScheduleRecord, type FiringRow, type ScheduleRow } from "./rows.ts";
import type { ClaimedFiring, FiringDecision, NewSchedule, ScheduleFiringRecord, ScheduleRecord, ScheduleStore } from "./types.ts";

type Row = ScheduleRow<string | number>;
const toRecord = (row: Row) => toScheduleRecord(row, parseSqliteDate);
const date = (value: Date | null) => (value == null ? null : formatSqliteDate(value));

export class SqliteScheduleStore implements ScheduleStore {
  readonly #gate: WriteGate;
  readonly #writer: SqliteDatabase;
  readonly #reader: SqliteDatabase;
  readonly #w;
  readonly #r;

  constructor(options: { writer: SqliteDatabase; reader: SqliteDatabase; gate: WriteGate }) {
    this.#gate = options.gate;
    const { writer, reader } = options;
    this.#writer = writer;
    this.#reader = reader;
    this.#w = {
      insert: writer.prepare(
        `INSERT INTO schedules (id, agent, cron, timezone, message, conversation_id, owner, owner_role, paused, missed_policy, next_run_at, created_at, webhook_url, webhook_events)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?)`,
      ),
      get: writer.prepare<[string], Row>(`SELECT ${SCHEDULE_COLUMNS} FROM schedules s WHERE s.id = ?`),
      pause: writer.prepare<[number, string]>(`UPDATE schedules SET paused = ? WHERE id = ?`),
      resume: writer.prepare<[number, string | null, string]>(`UPDATE schedules SET paused = ?, next_run_at = ? WHERE id = ?`),
      delete: writer.prepare<[string]>(`DELETE FROM schedules WHERE id = ?`),
      due: writer.prepare<[string, number], Row>(
        `SELECT ${SCHEDULE_COLUMNS} FROM schedules s WHERE s.paused = 0 AND s.next_run_at IS NOT NULL AND s.next_run_at <= ? ORDER BY s.next_run_at, s.id LIMIT ?`,
      ),
      advance: writer.prepare<[string | null, string, string]>(`UPDATE schedules SET next_run_at = ? WHERE id = ? AND next_run_at = ? AND paused = 0`),
      fire: writer.prepare<[string, string, string, string]>(
        `INSERT INTO schedule_firings (schedule_id, fire_at, claimed_at, claimed_by) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
      ),
      recordRun: writer.prepare<[string, string, string]>(`UPDATE schedule_firings SET run_id = ? WHERE schedule_id = ? AND fire_at = ?`),
      recordError: writer.prepare<[string, string, string]>(`UPDATE schedule_firings SET error = ? WHERE schedule_id = ? AND fire_at = ?`),
    };
    this.#r = {
      get: reader.prepare<[string], Row>(`SELECT ${SCHEDULE_COLUMNS} FROM schedules s WHERE s.id = ?`),
      due: reader.prepare<[string, number], Row>(
        `SELECT ${SCHEDULE_COLUMNS} FROM schedules s WHERE s.paused = 0 AND s.next_run_at IS NOT NULL AND s.next_run_at <= ? ORDER BY s.next_run_at, s.id LIMIT ?`,
      ),
      ofRun: reader.prepare<[string], Row>(
        `SELECT ${SCHEDULE_COLUMNS} FROM schedule_firings r JOIN schedules s ON s.id = r.schedule_id WHERE r.run_id = ? LIMIT 1`,
      ),
      ofRuns: reader.prepare<[string], Row & { for_run: string }>(
        `SELECT r.run_id AS for_run, ${SCHEDULE_COLUMNS} FROM schedule_firings r JOIN schedules s ON s.id = r.schedule_id WHERE r.run_id IN (SELECT value FROM json_each(?))`,
      ),
      firings: reader.prepare<[string], FiringRow<string>>(`SELECT ${FIRING_COLUMNS} FROM schedule_firings WHERE schedule_id = ? ORDER BY fire_at`),
    };
  }

  create(schedule: NewSchedule): Promise<ScheduleRecord> {
    return this.#gate.run(() => {
      this.#w.insert.run(
        schedule.id,
        schedule.agent,
        schedule.cron,
        schedule.timezone,
        schedule.message,
        schedule.conversationId,
        schedule.owner,
        schedule.ownerRole,
        schedule.missedPolicy,
        date(schedule.nextRunAt),
        formatSqliteDate(schedule.createdAt),
        schedule.webhook?.url ?? null,
        schedule.webhook ? encodeWebhookEvents(schedule.webhook.events) : null,
      );
      return toRecord(this.#w.get.get(schedule.id)!);
    });
  }

  async get(id: string): Promise<ScheduleRecord | null> {
    const row = this.#r.get.get(id);
    return row ? toRecord(row) : null;
  }

  async list(query: PageQuery, owner: string | null): Promise<ScheduleRecord[]> {
    const backward = query.take < 0;
    const where: string[] = [];
    const params: (string | number)[] = [];
    if (owner !== null) {
      where.push("s.owner = ?");
      params.push(owner);
    }
    if (query.cursor !== undefined) {
      const at = this.#reader.prepare<[string], { created_at: string }>(`SELECT created_at FROM schedules WHERE id = ?`).get(query.cursor);
      if (!at) return [];
      where.push(backward ? "(s.created_at, s.id) <= (?, ?)" : "(s.created_at, s.id) >= (?, ?)");
      params.push(at.created_at, query.cursor);
    }
    const order = backward ? "DESC" : "ASC";
    const sql = `SELECT ${SCHEDULE_COLUMNS} FROM schedules s ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
      ORDER BY s.created_at ${order}, s.id ${order} LIMIT ? OFFSET ?`;
    const rows = this.#reader.prepare<(string | number)[], Row>(sql).all(...params, Math.abs(query.take), query.skip);
    const records = rows.map(toRecord);
    return backward ? records.reverse() : records;
  }

  setPaused(id: string, paused: boolean, next: Date | null): Promise<ScheduleRecord | null> {
    return this.#gate.run(() => {
      const changes = paused ? this.#w.pause.run(1, id).changes : this.#w.resume.run(0, date(next), id).changes;
      if (changes === 0) return null;
      return toRecord(this.#w.get.get(id)!);
    });
  }

  delete(id: string): Promise<boolean> {
    return this.#gate.run(() => this.#w.delete.run(id).changes > 0);
  }

  async due(now: Date, limit: number): Promise<ScheduleRecord[]> {
    return this.#r.due.all(formatSqliteDate(now), limit).map(toRecord);
  }

  claimDue(now: Date, limit: number, claimedBy: string, decide: (schedule: ScheduleRecord) => FiringDecision): Promise<ClaimedFiring[]> {
    return this.#gate.run(() =>
      this.#writer
        .transaction(() => {
          const claimed: ClaimedFiring[] = [];
          for (const row of this.#w.due.all(formatSqliteDate(now), limit)) {
            const schedule = toRecord(row);
            const decision = decide(schedule);
            // The row as read: a process that advanced it first leaves this update nothing to change.
            if (this.#w.advance.run(date(decision.next), schedule.id, String(row.next_run_at)).changes === 0) continue;
            if (!decision.fireAt) continue;
            if (this.#w.fire.run(schedule.id, formatSqliteDate(decision.fireAt), formatSqliteDate(now), claimedBy).changes === 0) continue;
            claimed.push({ schedule: { ...schedule, nextRunAt: decision.next }, fireAt: decision.fireAt });
          }
          return claimed;
        })
        .immediate(),
    );
  }

  recordFiring(scheduleId: string, fireAt: Date, outcome: { runId: string } | { error: string }): Promise<void> {
    const at = formatSqliteDate(fireAt);
    return this.#gate.run(() => {
      if ("runId" in outcome) this.#w.recordRun.run(outcome.runId, scheduleId, at);
      else this.#w.recordError.run(outcome.error, scheduleId, at);
    });
  }

  async scheduleOfRun(runId: string): Promise<ScheduleRecord | null> {
    const row = this.#r.ofRun.get(runId);
    return row ? toRecord(row) : null;
  }

  async schedulesOfRuns(runIds: readonly string[]): Promise<Map<string, ScheduleRecord>> {
    if (!runIds.length) return new Map();
    return new Map(this.#r.ofRuns.all(JSON.stringify(runIds)).map((row) => [row.for_run, toRecord(row)]));
  }

  async firings(scheduleId: string): Promise<ScheduleFiringRecord[]> {
    return this.#r.firings.all(scheduleId).map((row) => toFiringRecord(row, parseSqliteDate));
  }
}
