// Launching a run this instance executes: its event log opened, RUNNING
// published, the work started in the background and tracked until its outcome
// is recorded (docs/design.md, section 3, step 4).
import type { RunHandover } from "../execution-seam.ts";
import type { ExecutionContext } from "./context.ts";
import { executeRun } from "./execute-run.ts";

/** Opens the run's event log, publishes RUNNING and starts the work; resolves once RUNNING can be read from any instance. */
export async function launchRun(ctx: ExecutionContext, { run, agent, input, change, principal, origin }: RunHandover): Promise<void> {
  const { bus, logger } = ctx.options;
  const controller = new AbortController();
  const events = bus.openRun(run.id, run.conversationId);
  events.publish({ type: "status", status: "running", errorCode: null, errorMessage: null });
  ctx.announce({ conversationId: run.conversationId, kind: change, at: ctx.now() });
  const watch = ctx.telemetry.start({ id: run.id, conversationId: run.conversationId, kind: run.kind, agent, queuedAt: run.queuedAt }, origin);
  const finished = watch
    .within(() => executeRun(ctx, { run, agentName: agent, input, controller, events, principal, watch }))
    .catch((error) => {
      logger.error("run could not be recorded", { runId: run.id, error });
      return null;
    })
    .then((final) => {
      watch.end(final && { status: final.status, errorCode: final.errorCode });
      return final;
    });
  ctx.active.set(run.id, { conversationId: run.conversationId, controller, finished });
  void finished.finally(() => {
    ctx.active.delete(run.id);
    // Its room and its endpoint's slot are free: the next queued run may go.
    void ctx.claimQueued();
  });
  // A subscriber told of the run by this mutation's answer finds its log, on any instance.
  await events.flushed().catch((error: unknown) => logger.warn("run events not yet delivered", { runId: run.id, error }));
}
