// A run's outcome, once its graph stopped: recorded first, then told
// (docs/design.md, section 3, steps 5 and 6). The outcome is committed before
// the terminal event is published, so a subscriber that sees the end and reads
// the run finds it recorded.
import type { RunOutcome, RunRecord, RunUsage } from "../../domain/records.ts";
import { mintMark } from "../../correlation/index.ts";
import type { RunPublisher } from "../../storage/event-bus/types.ts";
import type { RunWatch } from "../../telemetry/run-telemetry.ts";
import type { Classified } from "../classify.ts";
import type { ExecutionContext } from "./context.ts";

/** What the execution saw of the run, from its start to its graph's stop. */
export interface RunEnding {
  run: RunRecord;
  agentName: string;
  /** How it ended early, classified; null when the graph returned. */
  failure: Classified | null;
  /** The checkpoints its graph wrote. */
  ownCheckpoints: ReadonlySet<string>;
  /** The text it streamed. */
  partial: string;
  /** The seq of the last event it published. */
  lastSeq: number;
  usage: RunUsage;
  events: RunPublisher;
  watch: RunWatch;
}

/** Reads the thread back, commits the outcome, then publishes interrupts and the terminal status. */
export async function recordOutcome(ctx: ExecutionContext, ending: RunEnding): Promise<RunRecord | null> {
  const { agent, store, logger } = ctx.options;
  const { run, agentName, ownCheckpoints, partial, lastSeq, usage, events, watch } = ending;
  let failure = ending.failure;
  const endMark = mintMark();
  let messageCount: number | null = null;
  let interrupts: RunOutcome["interrupts"] = [];
  try {
    const thread = await agent.readThread(run.conversationId, agentName);
    messageCount = thread.messages.length;
    // A stop (cancel, shutdown) or an error that comes after the graph saved its
    // last checkpoint, with nothing left to run, cut nothing short: the run completed.
    if (failure && thread.next.length === 0 && thread.interrupts.length === 0 && thread.checkpointId !== null && ownCheckpoints.has(thread.checkpointId)) {
      logger.info("run reached its end before it could be stopped", { runId: run.id, ignored: failure.errorCode });
      failure = null;
    }
    // Paused on interrupt(): waiting for a person, told by the pending tasks (not by next).
    if (!failure) interrupts = thread.interrupts.map(({ id, node, value }) => ({ id, node, value }));
  } catch (error) {
    logger.warn("could not read the thread after the run", { runId: run.id, error });
  }
  if (failure) {
    const level = failure.status === "failed" ? "warn" : "info";
    logger[level]("run ended early", { runId: run.id, errorCode: failure.errorCode, errorMessage: failure.errorMessage });
  }
  const outcome: RunOutcome = {
    status: failure?.status ?? (interrupts.length ? "waiting" : "completed"),
    errorCode: failure?.errorCode ?? null,
    errorMessage: failure?.errorMessage ?? null,
    partialOutput: failure && partial ? partial : null,
    finishedAt: ctx.now(),
    endMark,
    lastEventSeq: lastSeq + 1 + interrupts.length,
    messageCount,
    usage,
    interrupts,
  };
  const recorded = await store.finishRun(run.id, outcome);
  // Null: another process already ended the row (a cross-process cancel); tell
  // subscribers what the database says, and add to the row what only this
  // process knows, the usage of the calls it finished included.
  let final = recorded ?? (await store.getRun(run.id));
  if (final) {
    if (recorded) {
      for (const i of interrupts) {
        watch.interrupt(i.id, i.node);
        events.publish({ type: "interrupt", interrupt: { ...i, runId: run.id, conversationId: run.conversationId, createdAt: outcome.finishedAt } });
      }
    }
    if (!recorded) {
      // Committed before the terminal event goes out (whose seq is the next one), like every outcome:
      // a subscriber that reads the run on that event finds the usage and text this process adds.
      await store.completeEndedElsewhere(run.id, { lastEventSeq: lastSeq + 1, partialOutput: partial || null, endMark, usage, messageCount });
      final = (await store.getRun(run.id)) ?? final;
    }
    const terminal = events.publish({ type: "status", status: final.status, errorCode: final.errorCode, errorMessage: final.errorMessage });
    if (!recorded && terminal.seq !== lastSeq + 1)
      logger.warn("terminal event seq differs from the one recorded", { runId: run.id, seq: terminal.seq, recorded: lastSeq + 1 });
    ctx.announce({ conversationId: run.conversationId, kind: "updated", at: ctx.now() });
    await events.flushed().catch((error: unknown) => logger.warn("run events not delivered", { runId: run.id, error }));
  }
  return final;
}
