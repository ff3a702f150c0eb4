// Correlation marks are minted from this host's clock and compared with marks
// other instances minted: a host whose clock differs from the database's by more
// than MAX_CLOCK_SKEW_MS does not start.
import { ConfigError } from "../config.ts";
import type { Logger } from "../logger.ts";

export interface ClockCheck {
  /** The database server's clock; null when the database is a local file (one clock, nothing to compare). */
  databaseTime(): Promise<Date | null>;
  maxClockSkewMs: number;
  logger: Logger;
  /** This host's clock, in ms (Date.now unless a test skews it). */
  clock: () => number;
}

export async function checkClockAgainstDatabase({ databaseTime, maxClockSkewMs, logger, clock }: ClockCheck): Promise<void> {
  const before = clock();
  const database = await databaseTime();
  if (database === null) return;
  const after = clock();
  const offsetMs = Math.round(database.getTime() - (before + after) / 2);
  const uncertaintyMs = Math.ceil((after - before) / 2);
  if (Math.abs(offsetMs) - uncertaintyMs > maxClockSkewMs) {
    throw new ConfigError(
      `MAX_CLOCK_SKEW_MS: this host's clock is ${offsetMs > 0 ? "behind" : "ahead of"} the database's by about ${Math.abs(offsetMs)} ms (more than ${maxClockSkewMs}); synchronise the clocks (NTP)`,
    );
  }
  if (Math.abs(offsetMs) > 100) logger.warn("this host's clock differs from the database's", { offsetMs, maxClockSkewMs });
}
