// Stopping runs that execute on this instance from outside their execution: a
// cancel another instance received, a row another process ended (noticed on
// each heartbeat), and a shutdown. Each aborts the run's signal; its execution
// records the outcome as for any stop.
import type { RunRecord } from "../../domain/records.ts";
import { RunAbortReason } from "../classify.ts";
import type { ExecutionContext } from "./context.ts";

/** A cancelRun received by another instance: stops the run if it executes here. Answers how to stop listening. */
export function listenForCancelRequests(ctx: ExecutionContext): () => void {
  return ctx.options.bus.onCancelRequest((runId) => ctx.active.get(runId)?.controller.abort(new RunAbortReason("cancel")));
}

/** Stops runs whose rows another process has ended (a cross-process cancel). */
export async function abortRunsEndedElsewhere(ctx: ExecutionContext): Promise<void> {
  if (ctx.active.size === 0) return; // nothing executes here: no read
  const ended = await ctx.options.store.notRunning([...ctx.active.keys()]);
  for (const id of ended) ctx.active.get(id)?.controller.abort(new RunAbortReason("cancel"));
}

/** Aborts every run executing here with the shutdown reason; answers their outcomes, each settling once it is recorded `interrupted`. */
export function abortForShutdown(ctx: ExecutionContext): Promise<RunRecord | null>[] {
  const pending = [...ctx.active.values()];
  for (const run of pending) run.controller.abort(new RunAbortReason("shutdown"));
  return pending.map((r) => r.finished);
}
