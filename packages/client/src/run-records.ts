// Reads of one run's stored record by a conversation store: for what its
// events do not carry (its kind, its start), and while it is QUEUED, for its
// place in the queue (nothing streams while it waits); in place of events a
// gap cut out, run-refill.ts. An answer that comes after the store moved on
// changes nothing.
import type { ActionError, ClientCore } from "./core.js";
import { RUN_RECORD } from "./documents.js";
import type { RunledgerRunFragment } from "./generated.js";
import type { Tracked } from "./snapshot.js";

/** What the reads see of their store. */
export interface RecordHost {
  readonly core: ClientCore;
  /** Changes when the store moves to another conversation (or detaches). */
  generation(): number;
  attached(): boolean;
  /** The run's record as read: what its events have not said is taken from it. */
  track(record: RunledgerRunFragment): void;
  /** The run changed: listeners are told at the next turn. */
  changed(): void;
  failed(error: ActionError): void;
}

/** Reads the run's record: its kind, start time and, while it waits, its place in the queue. */
export async function readRunRecord(host: RecordHost, tracked: Tracked): Promise<void> {
  const gen = host.generation();
  try {
    const data = await host.core.query(RUN_RECORD, { id: tracked.live.run.id });
    if (gen !== host.generation() || !data.run) return;
    host.track(data.run);
    host.changed();
  } catch {
    // The events carry the status; kind and start time wait for the next read.
  }
}

/** While the run is QUEUED, reads its place in the queue every `queuePollMs` (nothing streams while it waits). */
export function pollQueue(host: RecordHost, tracked: Tracked): void {
  if (tracked.poll || !host.attached() || tracked.live.run.status !== "QUEUED") return;
  const gen = host.generation();
  tracked.poll = setTimeout(async () => {
    tracked.poll = null;
    if (gen !== host.generation() || tracked.live.run.status !== "QUEUED") return;
    await readRunRecord(host, tracked);
    if (gen === host.generation()) pollQueue(host, tracked);
  }, host.core.queuePollMs);
}
