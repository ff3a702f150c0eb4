// A conversation store's refill of a run whose events a gap cut out: its
// stored record is read, and its messages take the place of what streamed.
// Gaps are rare (the server's replay buffer lost events), so conversation.ts
// loads this module on the first one: an app's bundler splits it off.
import { RUN_RECORD } from "./documents.js";
import { refill } from "./run-log.js";
import type { RecordHost } from "./run-records.js";
import type { Tracked } from "./snapshot.js";

/** Reads the run's stored record in place of events it missed; one read at a time, and one more if a gap came meanwhile. */
export async function refillRun(host: RecordHost, tracked: Tracked, gen = host.generation()): Promise<void> {
  if (gen !== host.generation()) return;
  if (tracked.refilling) {
    tracked.refillAgain = true;
    return;
  }
  tracked.refilling = true;
  try {
    do {
      tracked.refillAgain = false;
      const data = await host.core.query(RUN_RECORD, { id: tracked.live.run.id });
      if (gen !== host.generation()) return;
      if (data.run) {
        tracked.live = refill(tracked.live, data.run);
        tracked.recorded = true;
        host.changed();
      }
    } while (tracked.refillAgain && gen === host.generation());
  } catch (error) {
    if (gen === host.generation()) host.failed({ code: "READ_FAILED", message: `could not read the run's stored record: ${(error as Error).message}` });
  } finally {
    if (gen === host.generation()) tracked.refilling = false;
  }
}
