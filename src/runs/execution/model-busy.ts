// A run whose model is busy goes back to the queue without giving up its graph
// (docs/design.md, section 3, step 4).
import type { RunEventBody } from "../../domain/events.ts";
import type { RunRecord } from "../../domain/records.ts";
import type { ExecutionContext } from "./context.ts";

/**
 * The model answered the run's call 503 (its own queue full): the run goes
 * back to the queue, QUEUED (MODEL_BUSY) and its endpoint slot free, and its
 * graph waits here at that call. After the backoff it takes its turn like
 * any queued run, on this instance (which holds its graph); once admitted it
 * is RUNNING again and the call is sent again. Rejects when the run is stopped.
 */
export async function queueAgain(
  ctx: ExecutionContext,
  run: RunRecord,
  publish: (body: RunEventBody) => void,
  backoffMs: number,
  signal: AbortSignal,
): Promise<void> {
  const { options, held } = ctx;
  const requeued = await options.store.requeueHeld(run.id, options.ownerId, ctx.now()).catch((error: unknown) => {
    options.logger.warn("a run the model turned away could not go back to the queue; it waits where it is", { runId: run.id, error });
    return false;
  });
  if (!requeued) {
    // Ended by another process (a cancel: its abort is on the way), or the database refused: until then, the backoff.
    await new Promise((resolve) => setTimeout(resolve, backoffMs));
    return;
  }
  publish({ type: "status", status: "queued", errorCode: null, errorMessage: null });
  ctx.announce({ conversationId: run.conversationId, kind: "updated", at: ctx.now() });
  await new Promise<void>((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      held.delete(run.id);
    };
    const onAbort = () => {
      done();
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      const waiting = held.get(run.id);
      if (!waiting) return;
      waiting.ready = true;
      void ctx.claimQueued();
    }, backoffMs);
    held.set(run.id, {
      ready: false,
      admit: () => {
        done();
        resolve();
      },
    });
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    // Its slot is free: the next queued run may go.
    void ctx.claimQueued();
  });
  publish({ type: "status", status: "running", errorCode: null, errorMessage: null });
  ctx.announce({ conversationId: run.conversationId, kind: "updated", at: ctx.now() });
}
