// The schedules seam: the `schedules` table (cron expressions that start runs)
// and `schedule_firings` (one row per firing claimed: which schedule, which
// nominal time, which run it started). The cron arithmetic is not storage's:
// the caller passes what the next firing is (src/schedules/cron.ts, croner), so
// a claim only compares and swaps times in one transaction.
import type { PageQuery } from "../page.ts";
import type { PrincipalRole } from "../../domain/principal.ts";
import type { WebhookTarget } from "../../domain/records.ts";

export type MissedPolicy = "SKIP" | "RUN_ONCE";

export interface ScheduleRecord {
  /** A UUID. */
  id: string;
  /** The agent each firing runs (a conversation's own, with one). */
  agent: string;
  /** The cron expression (croner: 5, 6 or 7 fields; seconds first with 6). */
  cron: string;
  /** The IANA time zone the expression is read in. */
  timezone: string;
  /** The message each firing sends. */
  message: string;
  /** Each firing is a new run on this conversation; null: a new conversation each time. */
  conversationId: string | null;
  /** The principal that created it: each firing's runs are started as it, and it alone (and admins) sees it. */
  owner: string;
  ownerRole: PrincipalRole;
  paused: boolean;
  missedPolicy: MissedPolicy;
  /** The next nominal firing time; null when the expression has no more. */
  nextRunAt: Date | null;
  createdAt: Date;
  /** The run the latest firing that started one started; null before any. */
  lastRunId: string | null;
  /** The webhook each firing's run gets (docs/webhooks.md); null for none. */
  webhook: WebhookTarget | null;
}

export type NewSchedule = Omit<ScheduleRecord, "lastRunId" | "paused" | "webhook"> & { webhook?: WebhookTarget | null };

/** What a claim does with one due schedule, decided by the caller from the schedule and the time now. */
export interface FiringDecision {
  /** The nominal time of the firing to run now; null to run none (a missed firing skipped). */
  fireAt: Date | null;
  /** The schedule's next nominal firing time after this claim; null when there is none. */
  next: Date | null;
}

export interface ClaimedFiring {
  schedule: ScheduleRecord;
  /** The nominal time this firing stands for: the key of its `schedule_firings` row. */
  fireAt: Date;
}

export interface ScheduleFiringRecord {
  scheduleId: string;
  fireAt: Date;
  /** The run it started; null while being started, when starting failed, or once the run is gone. */
  runId: string | null;
  /** Why no run was started (a quota, say); null otherwise. */
  error: string | null;
  claimedAt: Date;
  /** The run owner id (src/runs/ownership.ts) of the instance that claimed it. */
  claimedBy: string;
}

export interface ScheduleStore {
  create(schedule: NewSchedule): Promise<ScheduleRecord>;
  /** The schedule with this id; null when there is none. */
  get(id: string): Promise<ScheduleRecord | null>;
  /** Oldest first (created_at, id); `owner` null: everyone's. Cursor terms as every list (../page.ts). */
  list(query: PageQuery, owner: string | null): Promise<ScheduleRecord[]>;
  /** Pauses or resumes it; resuming sets the next firing time (`next`, computed from now by the caller). Null for an unknown id. */
  setPaused(id: string, paused: boolean, next: Date | null): Promise<ScheduleRecord | null>;
  /** Deletes it and its firings; false for an unknown id. */
  delete(id: string): Promise<boolean>;
  /** Unpaused schedules whose next firing is at or before `now`, soonest first, at most `limit`. */
  due(now: Date, limit: number): Promise<ScheduleRecord[]>;
  /**
   * Claims up to `limit` due schedules in one transaction: for each, `decide`
   * says which firing (if any) runs now and the next firing time; the next time
   * is written only where `next_run_at` is still what was read (SQLite) or the
   * row was locked (PostgreSQL: FOR UPDATE SKIP LOCKED), and a firing's row is
   * inserted with it. So across instances each firing is claimed once.
   */
  claimDue(now: Date, limit: number, claimedBy: string, decide: (schedule: ScheduleRecord) => FiringDecision): Promise<ClaimedFiring[]>;
  /** Records the outcome of starting a claimed firing's run: its run, or why there is none. */
  recordFiring(scheduleId: string, fireAt: Date, outcome: { runId: string } | { error: string }): Promise<void>;
  /** The schedule whose firing started this run; null for a run no schedule started (or a deleted schedule's). */
  scheduleOfRun(runId: string): Promise<ScheduleRecord | null>;
  /** The same for many runs at once (Run.schedule in a list); runs no schedule started are left out. */
  schedulesOfRuns(runIds: readonly string[]): Promise<Map<string, ScheduleRecord>>;
  /** A schedule's firings, oldest first. */
  firings(scheduleId: string): Promise<ScheduleFiringRecord[]>;
}
