// Executing a run's graph: its events published as they happen, its usage
// metered, and how it ended classified for the outcome (record-outcome.ts).
import type { RunInput } from "../../agent/runtime.ts";
import { runUserOf } from "../../agent/run-user.ts";
import type { ModelTransportReport } from "../../agent/model-fetch.ts";
import type { RunEventBody } from "../../domain/events.ts";
import type { RunRecord, RunUsage } from "../../domain/records.ts";
import type { Principal } from "../../domain/principal.ts";
import type { RunPublisher } from "../../storage/event-bus/types.ts";
import type { RunWatch } from "../../telemetry/run-telemetry.ts";
import { turns } from "../../turns.ts";
import { classifyFailure, type Classified } from "../classify.ts";
import { StoredEvents } from "../stored-events.ts";
import { startPoint } from "../start-point.ts";
import type { ExecutionContext } from "./context.ts";
import { queueAgain } from "./model-busy.ts";
import { recordOutcome } from "./record-outcome.ts";

/** What the run executes with, as launch.ts opened it. */
export interface RunWork {
  run: RunRecord;
  agentName: string;
  input: RunInput;
  controller: AbortController;
  events: RunPublisher;
  principal: Principal;
  watch: RunWatch;
}

/** Runs the graph to its stop, then records the outcome; resolves with the run as recorded. */
export async function executeRun(ctx: ExecutionContext, work: RunWork): Promise<RunRecord | null> {
  const { run, agentName, input, controller, events, principal, watch } = work;
  const { agent, logger } = ctx.options;
  const report: ModelTransportReport = { timedOut: false };
  const startedAt = performance.now();
  const usage: RunUsage = { inputTokens: 0, outputTokens: 0, modelCalls: 0, timeToFirstTokenMs: null, modelDurationMs: 0 };
  let durationNs = 0;
  let partial = "";
  let lastSeq = 1;
  let settled = false;
  const stored = new StoredEvents(ctx.options.runEvents, run.id, logger);
  const publish = (body: RunEventBody) => {
    // An aborted graph may still finish a write in the background; once the
    // outcome is being recorded, late events are dropped, never sent after it.
    if (settled) return;
    const event = events.publish(body);
    lastSeq = event.seq;
    stored.observe(event);
  };
  const ownCheckpoints = new Set<string>();
  let failure: Classified | null = null;
  try {
    // Starting a graph is work of its own: its turn on the loop, not a share of whatever ended the run before it.
    await turns.turn();
    await moveStartPastEarlierRuns(ctx, run);
    await agent.execute({
      agentName,
      conversationId: run.conversationId,
      runId: run.id,
      journal: ctx.options.toolJournal,
      // Who the run works for: the caller that started or resumed it, never stored in the thread.
      user: runUserOf(principal),
      input,
      signal: controller.signal,
      report,
      trace: watch.trace,
      hooks: {
        onToken: (text, messageId, node) => {
          // The partial output is exactly the text streamed: a token dropped as late is in neither.
          if (settled) return;
          usage.timeToFirstTokenMs ??= Math.round(performance.now() - startedAt);
          watch.token();
          partial += text;
          publish({ type: "token", text, messageId, node });
        },
        onToolCall: (toolCallId, name, args, attempt) => publish({ type: "toolCall", toolCallId, name, args, attempt }),
        onToolResult: (toolCallId, name, content, isError, attempt) => publish({ type: "toolResult", toolCallId, name, content, isError, attempt }),
        onCheckpoint: (checkpointId) => {
          ownCheckpoints.add(checkpointId);
          publish({ type: "checkpoint", checkpointId, conversationId: run.conversationId });
          void stored.flush();
        },
        onCustom: (name, data) => publish({ type: "custom", name, data }),
        // Under admission a busy model sends the run back to the queue, its slot free for others.
        onModelBusy: ctx.options.admission ? (backoffMs) => queueAgain(ctx, run, publish, backoffMs, controller.signal) : undefined,
        onModelCall: (call) => {
          usage.modelCalls += 1;
          usage.inputTokens += call.inputTokens;
          usage.outputTokens += call.outputTokens;
          durationNs += call.durationNs;
          watch.modelCall(call.inputTokens, call.outputTokens);
        },
      },
    });
  } catch (error) {
    failure = classifyFailure(error, controller.signal.reason, report);
  }
  settled = true;
  // Stored before the outcome: whoever reads the terminal status finds them.
  await stored.flush();
  usage.modelDurationMs = Math.round(durationNs / 1e6);
  return recordOutcome(ctx, { run, agentName, failure, ownCheckpoints, partial, lastSeq, usage, events, watch });
}

/**
 * A run that waited behind another (ENQUEUE) was given its start when it was
 * queued; it starts now, after what that run recorded, so its correlation
 * window holds only its own checkpoints.
 */
async function moveStartPastEarlierRuns(ctx: ExecutionContext, run: RunRecord): Promise<void> {
  if (run.queuedAt === null) return;
  const floor = await ctx.options.store.lastMark(run.conversationId);
  if (floor === null || floor <= run.startMark) return;
  const [startMark, head] = await startPoint(ctx.options, run.conversationId);
  await ctx.options.store.moveStart(run.id, startMark, head);
}
