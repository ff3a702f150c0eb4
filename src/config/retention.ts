// The RETENTION_* settings (docs/retention.md): each policy is off while its
// variable is unset, so a deployment keeps everything until it opts in.
import { ConfigError, intVar, type Env } from "./vars.ts";

export interface RetentionConfig {
  /** `RETENTION_CONVERSATION_DAYS`: a conversation idle this many days is deleted (an agent's `retention.conversationDays` wins); null keeps them. */
  conversationDays: number | null;
  /** `RETENTION_CHECKPOINTS_KEEP`: the latest checkpoints kept per thread besides those a run starts from, ends at or waits on; null keeps all. */
  checkpointsKeep: number | null;
  /** `RETENTION_EVENTS_DAYS`: run events and tool journals of runs ended this many days ago are deleted; null keeps them. */
  eventsDays: number | null;
  /** `RETENTION_SWEEP_MS`, default 60000: how often an instance tries to sweep (one at a time holds the lease). */
  sweepMs: number;
}

/** A whole number in a range, or null when the variable is unset or empty. */
function optionalIntVar(env: Env, name: string, min: number, max: number): number | null {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return null;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number (unset keeps everything), got "${raw}"`);
  return intVar(env, name, 0, min, max);
}

export function retentionConfig(env: Env): RetentionConfig {
  return {
    conversationDays: optionalIntVar(env, "RETENTION_CONVERSATION_DAYS", 1, 36_500),
    // At least one: the thread's latest checkpoint is where its next run starts.
    checkpointsKeep: optionalIntVar(env, "RETENTION_CHECKPOINTS_KEEP", 1, 1_000_000),
    eventsDays: optionalIntVar(env, "RETENTION_EVENTS_DAYS", 1, 36_500),
    sweepMs: intVar(env, "RETENTION_SWEEP_MS", 60_000, 10, 86_400_000),
  };
}
