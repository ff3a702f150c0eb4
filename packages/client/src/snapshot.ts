// A conversation store's snapshot, made from what the store holds: the last
// read of the conversation, the runs it knows of with what each streamed, and
// the messages it sent; a pure function of that state. Messages a read
// already holds are shown once, from the read, with the server's ids.
import type { RunledgerConversationQuery } from "./generated.js";
import type { ActionError } from "./core.js";
import type { SubmitOptions } from "./conversation.js";
import { toPendingInterrupt, type PendingInterrupt } from "./interrupts.js";
import { isTerminal, storedMessage, type ChatMessage, type LiveRun, type RunState } from "./run-log.js";

export type ConversationData = NonNullable<RunledgerConversationQuery["conversation"]>;

export interface ConversationSnapshot {
  /** The conversation shown; null for a new one until its first submit() creates it. */
  conversationId: string | null;
  /**
   * - `idle`: no conversation yet (submit() starts one);
   * - `loading`: its first read is under way;
   * - `ready`;
   * - `missing`: no such conversation (deleted, or not the caller's).
   */
  phase: "idle" | "loading" | "ready" | "missing";
  title: string | null;
  /** The thread: its stored messages, then what live runs streamed, then messages sent and not yet in it. */
  messages: readonly ChatMessage[];
  /** The newest run: streaming, waiting its turn, or the last to end, with its status as the server reports it. */
  run: RunState | null;
  /** A run is queued or running: stop() cancels it. */
  busy: boolean;
  /** What the thread waits for (a WAITING run's questions): answer with respond(). */
  interrupts: readonly PendingInterrupt[];
  /** The nodes still to run (LangGraph's next). */
  next: readonly string[];
  /** A pending step and nothing running or waiting for an answer: resume() continues it. */
  resumable: boolean;
  /** Listening for changes; false after detach(). */
  attached: boolean;
  /** The last read that failed (null once one succeeds), or why following a run stopped. */
  error: ActionError | null;
}

/** A run this store knows of. */
export interface Tracked {
  live: LiveRun;
  /** Discovery order, for runs whose start time is not known yet. */
  order: number;
  /** The store's tick when its end was applied (or read): a read started after it shows its outcome. */
  endTick: number | null;
  stop: (() => void) | null;
  poll: ReturnType<typeof setTimeout> | null;
  refilling: boolean;
  refillAgain: boolean;
  /** Its record (kind, start time, input) has been read or given. */
  recorded: boolean;
}

/** A message sent from this store, shown before the server has it. */
export interface Outgoing {
  key: string;
  content: string;
  options: SubmitOptions;
  runId: string | null;
  state: "sending" | "unsent";
  error: { code: string; message: string } | null;
}

/** What a store holds. */
export interface StoreState {
  conversationId: string | null;
  phase: ConversationSnapshot["phase"];
  /** The last read, and the store's tick when it started. */
  base: { data: ConversationData; tick: number } | null;
  runs: ReadonlyMap<string, Tracked>;
  outgoing: readonly Outgoing[];
  attached: boolean;
  error: ActionError | null;
}

function outgoingMessage(o: Outgoing): ChatMessage {
  return {
    id: `pending:${o.key}`,
    role: "USER",
    content: o.content,
    toolCalls: [],
    toolCallId: null,
    name: null,
    runId: o.runId,
    state: o.state,
    ...(o.error ? { error: o.error } : {}),
  };
}

function startOrder(t: Tracked): string {
  return t.live.run.startedAt ?? "\uffff";
}

/** Oldest first: by start time, then in the order the store learned of them. */
export function sortedRuns(runs: ReadonlyMap<string, Tracked>): Tracked[] {
  return [...runs.values()].sort((a, b) => {
    const x = startOrder(a);
    const y = startOrder(b);
    return x < y ? -1 : x > y ? 1 : a.order - b.order;
  });
}

export function deriveSnapshot(state: StoreState): ConversationSnapshot {
  const data = state.base?.data ?? null;
  const baseTick = state.base?.tick ?? -1;
  const runs = sortedRuns(state.runs);
  const newest = runs.at(-1);
  const stoppedEarly = (t: Tracked) => ["FAILED", "CANCELLED", "INTERRUPTED"].includes(t.live.run.status);
  // Runs the last read does not show the outcome of; and the newest, if it stopped early: what it streamed is not in the thread.
  const overlay = runs.filter((t) => !(t.endTick !== null && t.endTick < baseTick) || (t === newest && stoppedEarly(t)));

  const messages: ChatMessage[] = (data?.messages ?? []).map((m) => storedMessage(m, null));
  const ids = new Set(messages.map((m) => m.id));
  const results = new Set(messages.filter((m) => m.role === "TOOL").map((m) => m.toolCallId));
  const calls = new Set(messages.flatMap((m) => m.toolCalls.map((c) => c.id)));
  const inThread = (m: ChatMessage) =>
    ids.has(m.id) || (m.role === "TOOL" && results.has(m.toolCallId)) || (m.toolCalls.length > 0 && m.toolCalls.every((c) => calls.has(c.id)));
  const shownOutgoing = new Set<Outgoing>();
  for (const t of overlay) {
    const run = t.live.run;
    const outgoing = state.outgoing.find((o) => o.runId === run.id);
    const userStored =
      t.live.messages.some((m) => m.role === "USER") || (data?.activeRun?.id === run.id && data.activeRun.messages.some((m) => m.role === "USER"));
    if (outgoing) shownOutgoing.add(outgoing);
    if (outgoing && !userStored) messages.push(outgoingMessage(outgoing));
    const stopped = stoppedEarly(t);
    for (const m of t.live.messages) {
      if (inThread(m)) continue;
      messages.push(stopped && m.state === "streaming" ? { ...m, state: "partial" } : m);
    }
  }
  for (const o of state.outgoing) if (!shownOutgoing.has(o) && (o.runId === null || !state.runs.has(o.runId))) messages.push(outgoingMessage(o));

  const run = runs.at(-1)?.live.run ?? null;
  const busy = overlay.some((t) => !isTerminal(t.live.run.status));
  let interrupts: PendingInterrupt[] = [];
  if (!busy) {
    interrupts = (data?.pendingInterrupts ?? []).map(toPendingInterrupt);
    for (const t of overlay) {
      if (t.live.run.status !== "WAITING") continue;
      for (const i of t.live.interrupts) if (!interrupts.some((known) => known.id === i.id)) interrupts.push(i);
    }
  }
  return {
    conversationId: state.conversationId,
    phase: state.phase,
    title: data?.title ?? null,
    messages,
    run,
    busy,
    interrupts,
    next: data?.next ?? [],
    resumable: !busy && (data?.resumable ?? false),
    attached: state.attached,
    error: state.error,
  };
}
