// Cron expressions, time zones and DST: croner's, never ours. This module only
// asks croner for the next firing after an instant, and decides what a sweep
// does with a schedule that is due (docs/schedules.md).
import { Cron } from "croner";
import { ValidationError } from "../domain/errors.ts";
import type { FiringDecision, ScheduleRecord } from "../storage/schedules/types.ts";

/** A firing found due later than this after its nominal time was missed (everything was down): its schedule's missedPolicy applies. */
export const MISSED_AFTER_MS = 60_000;

const MAX_CRON_CHARS = 200;
const MAX_TIMEZONE_CHARS = 100;

function cronOf(cron: string, timezone: string): Cron {
  // Without a function to call croner starts no timer: it only computes.
  return new Cron(cron, { timezone });
}

/** The first firing strictly after `after`, as a UTC instant; null when the expression has no more. */
export function nextFiring(cron: string, timezone: string, after: Date): Date | null {
  return cronOf(cron, timezone).nextRun(after);
}

/** The expression and time zone, checked by croner; a ValidationError (field "cron" or "timezone") otherwise. Answers the first firing after `now`. */
export function validateCron(cron: string, timezone: string, now: Date): Date {
  if (cron.trim().length === 0 || cron.length > MAX_CRON_CHARS) throw new ValidationError(`cron must be 1 to ${MAX_CRON_CHARS} characters`, "cron");
  if (timezone.trim().length === 0 || timezone.length > MAX_TIMEZONE_CHARS) {
    throw new ValidationError(`timezone must be an IANA time zone name such as Europe/Berlin`, "timezone");
  }
  try {
    // The expression alone first (in UTC), so its refusal names the field at fault.
    cronOf(cron, "UTC");
  } catch (error) {
    throw new ValidationError(`cron ${JSON.stringify(cron)} is not a valid cron expression: ${(error as Error).message}`, "cron");
  }
  let next: Date | null;
  try {
    next = nextFiring(cron, timezone, now);
  } catch {
    throw new ValidationError(`timezone ${JSON.stringify(timezone)} is not a known IANA time zone (for example Europe/Berlin)`, "timezone");
  }
  if (!next) throw new ValidationError(`cron ${JSON.stringify(cron)} never fires after ${now.toISOString()}`, "cron");
  return next;
}

/**
 * What a sweep at `now` does with a due schedule: a firing found within
 * MISSED_AFTER_MS of its nominal time runs; one found later was missed, and
 * runs once (RUN_ONCE) or not at all (SKIP). Either way the next firing is the
 * first after now, so firings missed meanwhile are not run one by one.
 */
export function decideFiring(schedule: Pick<ScheduleRecord, "cron" | "timezone" | "missedPolicy" | "nextRunAt">, now: Date): FiringDecision {
  const due = schedule.nextRunAt ?? now;
  let next: Date | null;
  try {
    next = nextFiring(schedule.cron, schedule.timezone, now);
  } catch {
    next = null; // a time zone the host no longer knows: the schedule stops, visibly (nextRunAt null)
  }
  const missed = now.getTime() - due.getTime() > MISSED_AFTER_MS;
  return { fireAt: missed && schedule.missedPolicy === "SKIP" ? null : due, next };
}
