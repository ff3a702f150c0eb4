// The quota rule both run stores apply inside a write's transaction (startRun, a
// fork's createConversation): counts in, a refusal (or none) out. Each store
// counts with its own SQL.
import { QuotaExceededError } from "../../domain/errors.ts";
import type { RunQuota } from "../../domain/records.ts";

export const QUOTA_WINDOW_MS = 60_000;

export interface QuotaCounts {
  /** The starter's running runs. */
  active: number;
  /** Its writes within the last QUOTA_WINDOW_MS (runs started, edits among them, and forks without a run), and the oldest of those. */
  recent: number;
  oldestRecent: Date | null;
}

/** The refusal the counts call for, or null when the run may start. */
export function quotaRefusal(quota: RunQuota, counts: QuotaCounts, now: Date): QuotaExceededError | null {
  if (quota.activeRuns > 0 && counts.active >= quota.activeRuns) {
    // When a run ends cannot be known: ask again in a second.
    return new QuotaExceededError(
      "QUOTA_ACTIVE_RUNS",
      1,
      `${counts.active} runs of yours are active; the limit is ${quota.activeRuns} at once (QUOTA_ACTIVE_RUNS)`,
    );
  }
  if (quota.runsPerMinute > 0 && counts.recent >= quota.runsPerMinute) {
    // The oldest start in the window leaves it first.
    const freeAt = (counts.oldestRecent?.getTime() ?? now.getTime()) + QUOTA_WINDOW_MS;
    const retryAfterSeconds = Math.max(1, Math.ceil((freeAt - now.getTime()) / 1000));
    return new QuotaExceededError(
      "QUOTA_RUNS_PER_MINUTE",
      retryAfterSeconds,
      `you made ${counts.recent} writes (runs, edits, forks) in the last minute; the limit is ${quota.runsPerMinute} (QUOTA_RUNS_PER_MINUTE)`,
    );
  }
  return null;
}
