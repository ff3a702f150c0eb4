// Schedules on PostgreSQL: one statement per call on the pool; a claim is one
// transaction that locks the due rows FOR UPDATE SKIP LOCKED, so instances
// polling together each take different schedules, and a firing's row is
// inserted beside the advanced next time.
import { encodeWebhookEvents } from "../../domain/webhooks.ts";
import { inTransaction, type PostgresPool } from "../postgres/database.ts";
import type { PageQuery } from "../page.ts";
import { FIRING_COLUMNS, SCHEDULE_COLUMNS, toFiringRecord, toScheduleRecord, type FiringRow, type ScheduleRow } from "./rows.ts";
import type { ClaimedFiring, FiringDecision, NewSchedule, ScheduleFiringRecord, ScheduleRecord, ScheduleStore } from "./types.ts";

type Row = ScheduleRow<Date>;
const toRecord = (row: Row) => toScheduleRecord(row, (d) => d);

const SQL = {
  insert: `INSERT INTO schedules (id, agent, cron, timezone, message, conversation_id, owner, owner_role, paused, missed_policy, next_run_at, created_at, webhook_url, webhook_events)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, false, $9, $10, $11, $12, $13)`,
  get: `SELECT ${SCHEDULE_COLUMNS} FROM schedules s WHERE s.id = $1`,
  pause: `UPDATE schedules SET paused = true WHERE id = $1`,
  resume: `UPDATE schedules SET paused = false, next_run_at = $2 WHERE id = $1`,
  delete: `DELETE FROM schedules WHERE id = $1`,
  due: `SELECT ${SCHEDULE_COLUMNS} FROM schedules s WHERE s.paused = false AND s.next_run_at IS NOT NULL AND s.next_run_at <= $1 ORDER BY s.next_run_at, s.id LIMIT $2`,
  claim: `SELECT ${SCHEDULE_COLUMNS} FROM schedules s WHERE s.paused = false AND s.next_run_at IS NOT NULL AND s.next_run_at <= $1
    ORDER BY s.next_run_at, s.id LIMIT $2 FOR UPDATE OF s SKIP LOCKED`,
  advance: `UPDATE schedules SET next_run_at = $2 WHERE id = $1`,
  fire: `INSERT INTO schedule_firings (schedule_id, fire_at, claimed_at, claimed_by) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
  recordRun: `UPDATE schedule_firings SET run_id = $3 WHERE schedule_id = $1 AND fire_at = $2`,
  recordError: `UPDATE schedule_firings SET error = $3 WHERE schedule_id = $1 AND fire_at = $2`,
  ofRun: `SELECT ${SCHEDULE_COLUMNS} FROM schedule_firings r JOIN schedules s ON s.id = r.schedule_id WHERE r.run_id = $1 LIMIT 1`,
  ofRuns: `SELECT r.run_id AS for_run, ${SCHEDULE_COLUMNS} FROM schedule_firings r JOIN schedules s ON s.id = r.schedule_id WHERE r.run_id = ANY($1)`,
  firings: `SELECT ${FIRING_COLUMNS} FROM schedule_firings WHERE schedule_id = $1 ORDER BY fire_at`,
};

export class PostgresScheduleStore implements ScheduleStore {
  readonly #pool: PostgresPool;

  constructor(pool: PostgresPool) {
    this.#pool = pool;
  }

  async create(s: NewSchedule): Promise<ScheduleRecord> {
    await this.#pool.query({
      name: "runledger_schedules_insert",
      text: SQL.insert,
      values: [
        s.id,
        s.agent,
        s.cron,
        s.timezone,
        s.message,
        s.conversationId,
        s.owner,
        s.ownerRole,
        s.missedPolicy,
        s.nextRunAt,
        s.createdAt,
        s.webhook?.url ?? null,
        s.webhook ? encodeWebhookEvents(s.webhook.events) : null,
      ],
    });
    return (await this.get(s.id))!;
  }

  async get(id: string): Promise<ScheduleRecord | null> {
    const { rows } = await this.#pool.query<Row>({ name: "runledger_schedules_get", text: SQL.get, values: [id] });
    return rows[0] ? toRecord(rows[0]) : null;
  }

  async list(query: PageQuery, owner: string | null): Promise<ScheduleRecord[]> {
    const backward = query.take < 0;
    const where: string[] = [];
    const values: unknown[] = [];
    if (owner !== null) {
      values.push(owner);
      where.push(`s.owner = $${values.length}`);
    }
    if (query.cursor !== undefined) {
      const { rows } = await this.#pool.query<{ created_at: Date }>(`SELECT created_at FROM schedules WHERE id = $1`, [query.cursor]);
      if (!rows[0]) return [];
      values.push(rows[0].created_at, query.cursor);
      where.push(`(s.created_at, s.id) ${backward ? "<=" : ">="} ($${values.length - 1}, $${values.length})`);
    }
    const order = backward ? "DESC" : "ASC";
    values.push(Math.abs(query.take), query.skip);
    const text = `SELECT ${SCHEDULE_COLUMNS} FROM schedules s ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
      ORDER BY s.created_at ${order}, s.id ${order} LIMIT $${values.length - 1} OFFSET $${values.length}`;
    const { rows } = await this.#pool.query<Row>(text, values);
    const records = rows.map(toRecord);
    return backward ? records.reverse() : records;
  }

  async setPaused(id: string, paused: boolean, next: Date | null): Promise<ScheduleRecord | null> {
    const result = paused
      ? await this.#pool.query({ name: "runledger_schedules_pause", text: SQL.pause, values: [id] })
      : await this.#pool.query({ name: "runledger_schedules_resume", text: SQL.resume, values: [id, next] });
    return result.rowCount ? this.get(id) : null;
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.#pool.query({ name: "runledger_schedules_delete", text: SQL.delete, values: [id] });
    return (result.rowCount ?? 0) > 0;
  }

  async due(now: Date, limit: number): Promise<ScheduleRecord[]> {
    const { rows } = await this.#pool.query<Row>({ name: "runledger_schedules_due", text: SQL.due, values: [now, limit] });
    return rows.map(toRecord);
  }

  claimDue(now: Date, limit: number, claimedBy: string, decide: (schedule: ScheduleRecord) => FiringDecision): Promise<ClaimedFiring[]> {
    return inTransaction(this.#pool, async (client) => {
      const { rows } = await client.query<Row>({ name: "runledger_schedules_claim", text: SQL.claim, values: [now, limit] });
      const claimed: ClaimedFiring[] = [];
      for (const row of rows) {
        const schedule = toRecord(row);
        const decision = decide(schedule);
        await client.query({ name: "runledger_schedules_advance", text: SQL.advance, values: [schedule.id, decision.next] });
        if (!decision.fireAt) continue;
        const fired = await client.query({ name: "runledger_schedules_fire", text: SQL.fire, values: [schedule.id, decision.fireAt, now, claimedBy] });
        if (fired.rowCount) claimed.push({ schedule: { ...schedule, nextRunAt: decision.next }, fireAt: decision.fireAt });
      }
      return claimed;
    });
  }

  async recordFiring(scheduleId: string, fireAt: Date, outcome: { runId: string } | { error: string }): Promise<void> {
    if ("runId" in outcome) await this.#pool.query({ name: "runledger_schedules_recordRun", text: SQL.recordRun, values: [scheduleId, fireAt, outcome.runId] });
    else await this.#pool.query({ name: "runledger_schedules_recordError", text: SQL.recordError, values: [scheduleId, fireAt, outcome.error] });
  }

  async schedulesOfRuns(runIds: readonly string[]): Promise<Map<string, ScheduleRecord>> {
    if (!runIds.length) return new Map();
    const { rows } = await this.#pool.query<Row & { for_run: string }>({ name: "runledger_schedules_ofRuns", text: SQL.ofRuns, values: [runIds] });
    return new Map(rows.map((row) => [row.for_run, toRecord(row)]));
  }

  async scheduleOfRun(runId: string): Promise<ScheduleRecord | null> {
    const { rows } = await this.#pool.query<Row>({ name: "runledger_schedules_ofRun", text: SQL.ofRun, values: [runId] });
    return rows[0] ? toRecord(rows[0]) : null;
  }

  async firings(scheduleId: string): Promise<ScheduleFiringRecord[]> {
    const { rows } = await this.#pool.query<FiringRow<Date>>({ name: "runledger_schedules_firings", text: SQL.firings, values: [scheduleId] });
    return rows.map((row) => toFiringRecord(row, (d) => d));
  }
}
