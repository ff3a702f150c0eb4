// What one run has streamed so far, built from its runEvents as the client
// SDK's follower hands them over: in seq order, each once, resumed after the
// last seq applied, a skipped seq reported as a gap. An event at or below the
// last seq applied changes nothing here either.
import type { CheckpointSummary, Interrupt, RunEvent, RunStatus } from "../api/types.ts";

/** The node the built-in agent's model tokens come from; any other is named beside its text. */
export const AGENT_NODE = "agent";

export type LiveItem =
  | { kind: "text"; key: string; messageId: string | null; node: string; text: string }
  | { kind: "tool"; key: string; toolCallId: string; name: string; args: unknown; result: { content: string; isError: boolean } | null }
  | { kind: "custom"; key: string; seq: number; name: string; data: unknown }
  | { kind: "gap"; key: string; fromSeq: number; toSeq: number };

export interface LiveRun {
  runId: string;
  /** The last seq applied; resubscribe with after: lastSeq. */
  lastSeq: number;
  status: RunStatus | null;
  errorCode: string | null;
  errorMessage: string | null;
  /** When the terminal status event was sent: the run's end until the snapshot has finishedAt. */
  endedAt: string | null;
  items: LiveItem[];
  checkpoints: CheckpointSummary[];
  /** What the run asked (InterruptEvent): known before the snapshot has them, since they come before the terminal WAITING. */
  interrupts: Interrupt[];
}

export function emptyLiveRun(runId: string): LiveRun {
  return { runId, lastSeq: 0, status: null, errorCode: null, errorMessage: null, endedAt: null, items: [], checkpoints: [], interrupts: [] };
}

/** Any status but QUEUED and RUNNING ends a run: WAITING too (a resume is a new run), and a status added later. */
export function isEnded(status: RunStatus | null | undefined): boolean {
  return status != null && !isActive(status);
}

/** Waiting its turn or executing: the run may still stream, and can be cancelled. */
export function isActive(status: RunStatus | null | undefined): boolean {
  return status === "RUNNING" || status === "QUEUED";
}

/**
 * Applies one event. `gap`: events before it that never came (a seq skipped);
 * shown where they were missed. The server's own ReplayGapEvent is shown as it comes.
 */
export function applyEvent(run: LiveRun, event: RunEvent, gap: { fromSeq: number; toSeq: number } | null = null): LiveRun {
  if (event.runId !== run.runId || event.seq <= run.lastSeq) return run;
  if (gap && event.__typename !== "ReplayGapEvent") {
    run = { ...run, items: [...run.items, { kind: "gap", key: `s${gap.fromSeq}`, fromSeq: gap.fromSeq, toSeq: gap.toSeq }] };
  }
  const next: LiveRun = { ...run, lastSeq: event.seq };
  switch (event.__typename) {
    case "RunStatusEvent":
      return { ...next, status: event.status, errorCode: event.errorCode, errorMessage: event.errorMessage, endedAt: isEnded(event.status) ? event.at : null };
    case "TokenEvent": {
      const last = run.items.at(-1);
      if (last?.kind === "text" && last.messageId === event.messageId && last.node === event.node) {
        return { ...next, items: [...run.items.slice(0, -1), { ...last, text: last.text + event.text }] };
      }
      return { ...next, items: [...run.items, { kind: "text", key: `t${event.seq}`, messageId: event.messageId, node: event.node, text: event.text }] };
    }
    case "ToolCallEvent":
      return {
        ...next,
        items: [...run.items, { kind: "tool", key: `c${event.seq}`, toolCallId: event.toolCallId, name: event.name, args: event.args, result: null }],
      };
    case "ToolResultEvent": {
      const result = { content: event.content, isError: event.isError };
      const index = run.items.findIndex((item) => item.kind === "tool" && item.toolCallId === event.toolCallId);
      if (index < 0) {
        // The call itself was not retained (a replay gap): show the result on its own.
        return { ...next, items: [...run.items, { kind: "tool", key: `r${event.seq}`, toolCallId: event.toolCallId, name: event.name, args: null, result }] };
      }
      const items = run.items.slice();
      items[index] = { ...(items[index] as Extract<LiveItem, { kind: "tool" }>), result };
      return { ...next, items };
    }
    case "CheckpointEvent":
      return run.checkpoints.some((c) => c.id === event.checkpoint.id) ? next : { ...next, checkpoints: [...run.checkpoints, event.checkpoint] };
    case "CustomEvent":
      return { ...next, items: [...run.items, { kind: "custom", key: `e${event.seq}`, seq: event.seq, name: event.name, data: event.data }] };
    case "InterruptEvent":
      return run.interrupts.some((i) => i.id === event.interrupt.id) ? next : { ...next, interrupts: [...run.interrupts, event.interrupt] };
    case "ReplayGapEvent":
      return { ...next, items: [...run.items, { kind: "gap", key: `g${event.seq}`, fromSeq: event.fromSeq, toSeq: event.toSeq }] };
    default:
      // An event type this console does not know yet: counted, not shown.
      return next;
  }
}
