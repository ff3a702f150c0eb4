// Schedule rows as both backends read them, and their conversion to records.
import type { PrincipalRole } from "../../domain/principal.ts";
import { decodeWebhookEvents } from "../../domain/webhooks.ts";
import type { MissedPolicy, ScheduleFiringRecord, ScheduleRecord } from "./types.ts";

/** The columns of a schedule, with its latest firing's run (`s` is the schedules table). */
export const SCHEDULE_COLUMNS = `s.id, s.agent, s.cron, s.timezone, s.message, s.conversation_id, s.owner, s.owner_role, s.paused, s.missed_policy, s.next_run_at, s.created_at, s.webhook_url, s.webhook_events,
  (SELECT f.run_id FROM schedule_firings f WHERE f.schedule_id = s.id AND f.run_id IS NOT NULL ORDER BY f.fire_at DESC LIMIT 1) AS last_run_id`;

export const FIRING_COLUMNS = `schedule_id, fire_at, run_id, error, claimed_at, claimed_by`;

export interface ScheduleRow<D> {
  id: string;
  agent: string;
  cron: string;
  timezone: string;
  message: string;
  conversation_id: string | null;
  owner: string;
  owner_role: string;
  paused: boolean | number;
  missed_policy: string;
  next_run_at: D | null;
  created_at: D;
  last_run_id: string | null;
  webhook_url: string | null;
  webhook_events: string | null;
}

export interface FiringRow<D> {
  schedule_id: string;
  fire_at: D;
  run_id: string | null;
  error: string | null;
  claimed_at: D;
  claimed_by: string;
}

export function toScheduleRecord<D>(row: ScheduleRow<D>, date: (value: D) => Date): ScheduleRecord {
  return {
    id: row.id,
    agent: row.agent,
    cron: row.cron,
    timezone: row.timezone,
    message: row.message,
    conversationId: row.conversation_id,
    owner: row.owner,
    ownerRole: row.owner_role as PrincipalRole,
    paused: Boolean(row.paused),
    missedPolicy: row.missed_policy as MissedPolicy,
    nextRunAt: row.next_run_at == null ? null : date(row.next_run_at),
    createdAt: date(row.created_at),
    lastRunId: row.last_run_id,
    webhook: row.webhook_url ? { url: row.webhook_url, events: decodeWebhookEvents(row.webhook_events ?? "") } : null,
  };
}

export function toFiringRecord<D>(row: FiringRow<D>, date: (value: D) => Date): ScheduleFiringRecord {
  return {
    scheduleId: row.schedule_id,
    fireAt: date(row.fire_at),
    runId: row.run_id,
    error: row.error,
    claimedAt: date(row.claimed_at),
    claimedBy: row.claimed_by,
  };
}
