// One conversation as the console shows it: the last snapshot read from the
// server (conversation query) combined with what live runs have streamed
// since. The snapshot is the record; live state fills in a run until the
// snapshot has its outcome.
import type {
  CheckpointSummary,
  ConversationDetails,
  Interrupt,
  Message,
  MessageNode,
  RunKind,
  RunStatus,
  RunUsage,
  StoredCustomEvent,
  TaskError,
} from "../api/types.ts";
import { isActive, isEnded, type LiveRun } from "./run-live.ts";

/** A run the console learned of before its snapshot did (started here, or noticed running). */
export interface StartedRun {
  id: string;
  kind: RunKind;
  status: RunStatus;
  input: string | null;
  startedAt: string;
}

export interface RunView {
  id: string;
  /** 1 for the conversation's first run. */
  number: number;
  kind: RunKind;
  status: RunStatus;
  input: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  partialOutput: string | null;
  startedAt: string;
  finishedAt: string | null;
  /** The messages the snapshot attributes to the run (its checkpoints). */
  messages: Message[];
  failedTasks: TaskError[];
  /** Null until the snapshot has the run's outcome. */
  usage: RunUsage | null;
  /** What it asked: the snapshot's record, or what it streamed until the snapshot has its outcome. */
  interrupts: Interrupt[];
  startCheckpoint: { id: string; step: number } | null;
  /** What the run streamed, while the snapshot does not have its outcome yet; null once it does. */
  live: LiveRun | null;
  /**
   * What this page received of the run, kept after the snapshot has its
   * outcome (with what the run stored, it makes the recorded turn: recorded-run.ts).
   */
  seen: LiveRun | null;
  /** The custom events the run stored (Run.customEvents); [] until the snapshot has the run. */
  customEvents: StoredCustomEvent[];
  /** The node of each message the run streamed (Run.messageNodes); [] until the snapshot has the run. */
  messageNodes: MessageNode[];
}

export function runViews(details: ConversationDetails | null, live: ReadonlyMap<string, LiveRun>, started: readonly StartedRun[]): RunView[] {
  const edges = details?.runs.edges ?? [];
  const first = (details?.runs.totalCount ?? 0) - edges.length + 1;
  const views: RunView[] = edges.map(({ node: run }, i) => {
    const stream = live.get(run.id) ?? null;
    const settled = isEnded(run.status);
    // The terminal event can arrive before the snapshot is read again: show its outcome meanwhile.
    const ended = !settled && stream && isEnded(stream.status) ? stream : null;
    return {
      ...run,
      number: first + i,
      status: ended?.status ?? run.status,
      errorCode: ended ? ended.errorCode : run.errorCode,
      errorMessage: ended ? ended.errorMessage : run.errorMessage,
      finishedAt: run.finishedAt ?? ended?.endedAt ?? null,
      interrupts: settled || !stream ? run.interrupts : stream.interrupts,
      live: settled ? null : stream,
      seen: stream,
    };
  });
  const known = new Set(views.map((v) => v.id));
  let number = first + edges.length;
  for (const run of started) {
    if (known.has(run.id)) continue;
    known.add(run.id);
    const stream = live.get(run.id) ?? null;
    views.push({
      ...run,
      number: number++,
      status: stream?.status ?? run.status,
      errorCode: stream?.errorCode ?? null,
      errorMessage: stream?.errorMessage ?? null,
      partialOutput: null,
      finishedAt: stream?.endedAt ?? null,
      messages: [],
      failedTasks: [],
      customEvents: [],
      messageNodes: [],
      usage: null,
      interrupts: stream?.interrupts ?? [],
      startCheckpoint: null,
      live: stream,
      seen: stream,
    });
  }
  return views;
}

/**
 * What the thread waits for: the snapshot's pending interrupts (the API's
 * authority), and those a run streamed before it ended WAITING that the
 * snapshot has not caught up with. Nothing while a run is running: its
 * questions, if any, come when it ends.
 */
export function pendingInterrupts(details: ConversationDetails | null, runs: readonly RunView[]): Interrupt[] {
  if (runs.some((r) => isActive(r.status))) return [];
  const pending = [...(details?.pendingInterrupts ?? [])];
  const known = new Set(pending.map((i) => i.id));
  for (const run of runs) {
    if (run.live?.status !== "WAITING") continue;
    for (const interrupt of run.live.interrupts) if (!known.has(interrupt.id) && interrupt.state === "PENDING") pending.push(interrupt);
  }
  return pending;
}

/**
 * The thread's messages before the first one a listed run added: those of
 * runs older than the page (or written outside every run). Later messages are
 * shown with their runs; a running run's are still changing and come from its
 * live events, so they are never counted here.
 */
export function earlierMessages(details: ConversationDetails | null, runs: readonly RunView[]): Message[] {
  if (!details) return [];
  const claimed = new Set(runs.flatMap((r) => r.messages.map((m) => m.id)));
  const first = details.messages.findIndex((m) => claimed.has(m.id));
  if (first >= 0) return details.messages.slice(0, first);
  return runs.some((r) => r.live !== null || isActive(r.status)) ? [] : details.messages;
}

export interface CheckpointFailure {
  node: string | null;
  message: string;
  runNumber: number;
}

export interface CheckpointView extends CheckpointSummary {
  runNumber: number | null;
  runStatus: RunStatus | null;
  /** Tasks that failed running from this checkpoint (LangGraph's __error__ writes). */
  failures: CheckpointFailure[];
}

/** The snapshot's checkpoints and those live runs reported since, newest first, each with its run and failures. */
export function checkpointViews(details: ConversationDetails | null, runs: readonly RunView[]): CheckpointView[] {
  const byId = new Map<string, CheckpointSummary>();
  for (const { node } of details?.checkpoints.edges ?? []) byId.set(node.id, node);
  for (const run of runs) for (const c of run.live?.checkpoints ?? []) if (!byId.has(c.id)) byId.set(c.id, c);
  const runById = new Map(runs.map((r) => [r.id, r]));
  const failures = new Map<string, CheckpointFailure[]>();
  for (const run of runs) {
    for (const task of run.failedTasks) {
      const list = failures.get(task.checkpoint.id) ?? [];
      list.push({ node: task.node, message: task.message, runNumber: run.number });
      failures.set(task.checkpoint.id, list);
    }
  }
  // Checkpoint ids are time-ordered (UUID v6): their order is the thread's.
  return [...byId.values()]
    .sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
    .map((c) => {
      const run = c.run ? runById.get(c.run.id) : undefined;
      return { ...c, runNumber: run?.number ?? null, runStatus: run?.status ?? null, failures: failures.get(c.id) ?? [] };
    });
}
