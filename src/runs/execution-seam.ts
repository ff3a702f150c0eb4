// The seam between the two sides of the run service. The API side (start,
// resume, cancel, fork, edit) validates, records the run's row and hands it
// over here; the execution side (execution/) claims, executes, records the
// outcome and stops runs. The API side knows the execution side only through
// this interface, and everything that crosses it is a run's row and plain
// data about its caller, so execution can move to another thread or process.
import type { RunInput } from "../agent/runtime.ts";
import type { RunRecord } from "../domain/records.ts";
import type { Principal } from "../domain/principal.ts";
import type { RunOrigin } from "../telemetry/run-telemetry.ts";

/** A run whose row is committed, with what executing it needs beside the row. */
export interface RunHandover {
  run: RunRecord;
  /** The agent it runs (the conversation's). */
  agent: string;
  input: RunInput;
  /** What conversationsChanged subscribers are told: a conversation made for this run, or one updated by it. */
  change: "created" | "updated";
  /** Who the run works for: the caller that started or resumed it (claims and a JWT are never stored). */
  principal: Principal;
  /** Where the run's span hangs: the request that recorded it. */
  origin: RunOrigin;
}

export interface RunExecution {
  /**
   * A run just recorded: executed at once when its row is already running (no
   * admission); queued otherwise, then a claim, which executes it here when this
   * instance has room and its endpoint a slot (or another instance takes it).
   * Resolves with the run as it stands, once a RUNNING event can be read from
   * any instance when it runs.
   */
  begin(handover: RunHandover): Promise<RunRecord>;
  /**
   * Stops a run executing on this instance (a cancel) and resolves with its
   * outcome once it is committed (null when it could not be recorded); null,
   * at once, when the run does not execute here.
   */
  stop(runId: string): Promise<RunRecord | null> | null;
  /** The outcome of a run executing on this instance, once it is committed; null when the run does not execute here. */
  finished(runId: string): Promise<RunRecord | null> | null;
  /** A run the API side ended before this instance claimed it (a queued run cancelled): its caller is forgotten. */
  forget(runId: string): void;
  /** Looks at the queue now: a queued run that ended frees the way for the ones behind it. */
  claimQueued(): Promise<void>;
}
