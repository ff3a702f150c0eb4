// A conversation store's snapshot, made from what the store holds: the last
// read of the conversation, the runs it knows of with what each streamed, and
// the messages it sent; a pure function of that state. Messages a read
// already holds are shown once, from the read, with the server's ids.
import type { RunledgerConversationQuery } from "./generated.js";
import type { ActionError } from "./core.js";
import type { SubmitOptions } from "./conversation-actions.js";
import { toPendingInterrupt, type PendingInterrupt } from "./interrupts.js";
import { isTerminal, storedMessage, type ChatMessage, type LiveRun, type RunState, type ToolCall } from "./run-log.js";
import type { ConnectionState } from "./transport.js";

export type ConversationData = NonNullable<RunledgerConversationQuery["conversation"]>;

/** The conversation as last read. */
export interface ConversationInfo {
  id: string;
  title: string | null;
  /** The agent its runs use. */
  agentName: string;
  /** When retention deletes it (its last activity plus the retention period); null: kept. */
  expiresAt: string | null;
}

export interface ConversationSnapshot {
  /** The conversation as last read (`{id, title, agentName, expiresAt}`); null until the first read, for a new one, and for a missing one. */
  conversation: ConversationInfo | null;
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
  /**
   * The thread: its stored messages (with `pageSize`, the newest page of them
   * and those loadOlder() showed), then what live runs streamed, then
   * messages sent and not yet in it.
   */
  messages: readonly ChatMessage[];
  /** Older stored messages are not shown (with `pageSize`): loadOlder() shows them. */
  hasOlder: boolean;
  /** How many older stored messages are not shown. */
  olderCount: number;
  /** A loadOlder() waits for the thread's first read. */
  loadingOlder: boolean;
  /** The newest run: streaming, waiting its turn, or the last to end, with its status as the server reports it. */
  run: RunState | null;
  /** The run QUEUED or RUNNING now (a RUNNING one before any queued behind it, else the oldest queued); null when none is. */
  activeRun: RunState | null;
  /**
   * The runs of this conversation the store has learned of since it opened it
   * (from reads, notices, its own actions), oldest first: those it follows or
   * last read, and the ones that ended before, as they ended.
   */
  runs: readonly RunState[];
  /** The last seq applied of `activeRun`, else of `run` (0 when there is none): where a rejoin starts. */
  lastSeq: number;
  /** A run is queued or running (`activeRun` is set): stop() cancels it. */
  busy: boolean;
  /** What the thread waits for (a WAITING run's questions): answer with respond(). */
  interrupts: readonly PendingInterrupt[];
  /** The nodes still to run (LangGraph's next). */
  next: readonly string[];
  /** A pending step and nothing running or waiting for an answer: resume() continues it. */
  resumable: boolean;
  /** The messages sent from this store that the thread does not hold yet (`sending`, or `unsent` with their error), as `messages` shows them. */
  pending: readonly ChatMessage[];
  /** The client's connection (the same object as `client.connection.getSnapshot()`): a new snapshot when it changes. */
  connection: ConnectionState;
  /** Listening for changes; false after detach(). */
  attached: boolean;
  /** The last read that failed (null once one succeeds), or why following a run stopped. */
  error: ActionError | null;
}

/**
 * A conversation store's state as plain JSON: what a server render reads
 * (loadConversation) and hands the page, which starts a store from it
 * (hydrate) showing the same thing, and rejoins its live run after `lastSeq`.
 */
export interface ConversationState {
  v: 1;
  conversationId: string;
  phase: "loading" | "ready" | "missing";
  /** The conversation as read: its stored messages, its runs in progress or last ended, what it waits for. */
  read: ConversationData | null;
  /**
   * The runs followed, oldest first: what each streamed up to its lastSeq, and
   * whether it ended before the read (`reflected`: the read shows its outcome),
   * after it, or not yet (null).
   */
  runs: { live: LiveRun; ended: "reflected" | "after-read" | null }[];
  /** The run still queued or running, if any: the page rejoins it after `lastSeq`. */
  liveRunId: string | null;
  /** The last seq of the live run applied here (0 when none). */
  lastSeq: number;
}

/** A store's state as plain JSON (serialize()): `runs` sorted oldest first. */
export function stateOf(
  conversationId: string,
  phase: ConversationSnapshot["phase"],
  base: { data: ConversationData; tick: number } | null,
  runs: readonly Tracked[],
): ConversationState {
  const baseTick = base?.tick ?? -1;
  const listed = runs.map((t) => ({
    live: t.live,
    ended: t.endTick === null ? null : t.endTick < baseTick ? ("reflected" as const) : ("after-read" as const),
  }));
  const live = listed.find((r) => !isTerminal(r.live.run.status))?.live.run ?? null;
  const state: ConversationState = {
    v: 1,
    conversationId,
    phase: phase === "idle" ? "loading" : phase,
    read: base?.data ?? null,
    runs: listed,
    liveRunId: live?.id ?? null,
    lastSeq: live?.lastSeq ?? 0,
  };
  return JSON.parse(JSON.stringify(state)) as ConversationState;
}

export interface ConversationOptions {
  /**
   * Start listening at once (the default). False: the store shows what it
   * starts from (a resume point in storage, a state handed from a server
   * render) and sends nothing until attach(), as a view does once it is
   * mounted.
   */
  attach?: boolean;
  /** Start from this state (loadConversation's, from a server render): its live run is rejoined after its lastSeq. */
  initial?: ConversationState;
  /** Keep resume points in the client's storage (default true). */
  persist?: boolean;
  /**
   * Show only the thread's newest `pageSize` stored messages at first (and
   * whatever runs stream after them); loadOlder() shows the ones before, a
   * page at a time. Default: the whole thread. The API answers a thread's
   * messages whole (Conversation.messages has no pagination), so this pages
   * what is shown, not what is read.
   */
  pageSize?: number;
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
  /** How many messages the thread had as read when it was sent (null: none read yet): its stored copy comes after them. */
  storedAfter: number | null;
}

/** What a store holds. */
export interface StoreState {
  conversationId: string | null;
  phase: ConversationSnapshot["phase"];
  /** The last read, and the store's tick when it started. */
  base: { data: ConversationData; tick: number } | null;
  runs: ReadonlyMap<string, Tracked>;
  /** Runs that ended and were let go once a read showed their outcome: only their final state is kept. */
  past: ReadonlyMap<string, { run: RunState; order: number }>;
  outgoing: readonly Outgoing[];
  connection: ConnectionState;
  attached: boolean;
  error: ActionError | null;
  /** How many of the read's oldest messages are not shown. */
  hidden: number;
  loadingOlder: boolean;
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

const EMPTY: readonly never[] = Object.freeze([]);

function sameCalls(a: readonly ToolCall[], b: readonly ToolCall[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  return a.every((c, i) => c.id === b[i]!.id && c.name === b[i]!.name && JSON.stringify(c.args) === JSON.stringify(b[i]!.args));
}

/** Whether two messages show the same: then the older object is kept, so a view can skip it by identity. */
export function sameMessage(a: ChatMessage, b: ChatMessage): boolean {
  return (
    a.id === b.id &&
    a.role === b.role &&
    a.content === b.content &&
    a.toolCallId === b.toolCallId &&
    a.name === b.name &&
    a.runId === b.runId &&
    a.state === b.state &&
    a.incomplete === b.incomplete &&
    a.isError === b.isError &&
    a.error?.code === b.error?.code &&
    a.error?.message === b.error?.message &&
    sameCalls(a.toolCalls, b.toolCalls)
  );
}

function sameItems<T>(a: readonly T[], b: readonly T[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** What one read of the conversation shows: its messages (as ChatMessages), and what they hold, for telling streamed messages apart. */
interface ReadView {
  data: ConversationData;
  messages: readonly ChatMessage[];
  byId: ReadonlyMap<string, ChatMessage>;
  results: ReadonlySet<string | null>;
  calls: ReadonlySet<string>;
  interrupts: readonly PendingInterrupt[];
}

/**
 * Makes a store's snapshots, structurally shared: a message that did not
 * change keeps its object from one snapshot to the next (a read that brings
 * the same message back included), an unchanged list keeps its array, and a
 * state that shows nothing new gives the previous snapshot itself. A thread's
 * stored messages are made once per read, so a token costs what the streamed
 * messages cost, not what the whole thread does.
 */
export class SnapshotBuilder {
  #read: ReadView | null = null;
  #info: ConversationInfo | null = null;
  #previous: ConversationSnapshot | null = null;
  /** A streamed message shown as `partial` (its run stopped early). */
  readonly #partial = new WeakMap<ChatMessage, ChatMessage>();
  /** A message sent from this store, as shown. */
  readonly #sent = new WeakMap<Outgoing, ChatMessage>();

  #readView(data: ConversationData): ReadView {
    if (this.#read?.data === data) return this.#read;
    const before = this.#read?.byId;
    const byId = new Map<string, ChatMessage>();
    const messages = data.messages.map((m) => {
      const made = storedMessage(m, null);
      const known = before?.get(made.id);
      const kept = known && sameMessage(known, made) ? known : made;
      byId.set(kept.id, kept);
      return kept;
    });
    const interrupts = data.pendingInterrupts.map(toPendingInterrupt);
    const previous = this.#read?.interrupts;
    this.#read = {
      data,
      messages,
      byId,
      results: new Set(messages.filter((m) => m.role === "TOOL").map((m) => m.toolCallId)),
      calls: new Set(messages.flatMap((m) => m.toolCalls.map((c) => c.id))),
      interrupts: previous && JSON.stringify(previous) === JSON.stringify(interrupts) ? previous : interrupts,
    };
    return this.#read;
  }

  #outgoing(o: Outgoing): ChatMessage {
    let shown = this.#sent.get(o);
    if (!shown) {
      shown = outgoingMessage(o);
      this.#sent.set(o, shown);
    }
    return shown;
  }

  #partialOf(m: ChatMessage): ChatMessage {
    let shown = this.#partial.get(m);
    if (!shown) {
      shown = { ...m, state: "partial" };
      this.#partial.set(m, shown);
    }
    return shown;
  }

  #allRuns(state: StoreState): RunState[] {
    return allRunsOf(state);
  }

  build(state: StoreState): ConversationSnapshot {
    const read = state.base ? this.#readView(state.base.data) : null;
    if (!state.base) this.#read = null;
    const data = read?.data ?? null;
    const baseTick = state.base?.tick ?? -1;
    const runs = sortedRuns(state.runs);
    const newest = runs.at(-1);
    const stoppedEarly = (t: Tracked) => ["FAILED", "CANCELLED", "INTERRUPTED"].includes(t.live.run.status);
    // The conversation's latest run as the last read names it, else the newest known: only its text, if it
    // stopped early, is shown beyond the thread. A run whose start time is not known yet sorts last, and an
    // older run that stopped early must never be shown below the answers that came after it.
    const latest = (data?.latestRun && runs.find((t) => t.live.run.id === data.latestRun!.id)) || newest;
    // A run that stopped early before the read's latest run: the read shows the thread after it, so what it
    // streamed (never in the thread) is not shown, whatever the order its end and that read reached the store.
    const superseded = (t: Tracked) => !!latest && t !== latest && stoppedEarly(t) && runs.indexOf(t) < runs.indexOf(latest);
    // Runs the last read does not show the outcome of; and the latest, if it stopped early: what it streamed is not in the thread.
    const overlay = runs.filter((t) => (!(t.endTick !== null && t.endTick < baseTick) || (t === latest && stoppedEarly(t))) && !superseded(t));

    const hidden = read ? Math.min(state.hidden, read.messages.length) : 0;
    const pending: ChatMessage[] = [];
    const messages: ChatMessage[] = read ? read.messages.slice(hidden) : [];
    const inThread = (m: ChatMessage) =>
      !!read &&
      (read.byId.has(m.id) ||
        (m.role === "TOOL" && read.results.has(m.toolCallId)) ||
        (m.toolCalls.length > 0 && m.toolCalls.every((c) => read.calls.has(c.id))));
    const shownOutgoing = new Set<Outgoing>();
    for (const t of overlay) {
      const run = t.live.run;
      const outgoing = state.outgoing.find((o) => o.runId === run.id);
      // The run's user message is in the thread: its events or its record say so, or (a read made between
      // its input's checkpoint and the run's record of it) a user message of that text came after the thread sent to.
      const userStored =
        t.live.messages.some((m) => m.role === "USER") ||
        (data?.activeRun?.id === run.id && data.activeRun.messages.some((m) => m.role === "USER")) ||
        (!!outgoing &&
          !!read &&
          outgoing.storedAfter !== null &&
          read.messages.slice(outgoing.storedAfter).some((m) => m.role === "USER" && m.content === outgoing.content));
      if (outgoing) shownOutgoing.add(outgoing);
      if (outgoing && !userStored) {
        const shown = this.#outgoing(outgoing);
        messages.push(shown);
        pending.push(shown);
      }
      const stopped = stoppedEarly(t);
      for (const m of t.live.messages) {
        if (inThread(m)) continue;
        messages.push(stopped && m.state === "streaming" ? this.#partialOf(m) : m);
      }
    }
    for (const o of state.outgoing) {
      if (shownOutgoing.has(o) || (o.runId !== null && state.runs.has(o.runId))) continue;
      const shown = this.#outgoing(o);
      messages.push(shown);
      pending.push(shown);
    }

    const run = newest?.live.run ?? null;
    const busy = overlay.some((t) => !isTerminal(t.live.run.status));
    const live = runs.filter((t) => !isTerminal(t.live.run.status)).map((t) => t.live.run);
    const activeRun = live.find((r) => r.status === "RUNNING") ?? live[0] ?? null;
    const allRuns = state.past.size === 0 ? runs.map((t) => t.live.run) : this.#allRuns(state);
    let conversation: ConversationInfo | null = null;
    if (data) {
      const known = this.#info;
      conversation =
        known && known.id === data.id && known.title === data.title && known.agentName === data.agentName && known.expiresAt === (data.expiresAt ?? null)
          ? known
          : { id: data.id, title: data.title ?? null, agentName: data.agentName, expiresAt: data.expiresAt ?? null };
    }
    this.#info = conversation ?? this.#info;
    let interrupts: readonly PendingInterrupt[] = EMPTY;
    if (!busy) {
      const fromRuns: PendingInterrupt[] = [];
      const known = read?.interrupts ?? EMPTY;
      for (const t of overlay) {
        if (t.live.run.status !== "WAITING") continue;
        for (const i of t.live.interrupts) if (!known.some((k) => k.id === i.id) && !fromRuns.some((k) => k.id === i.id)) fromRuns.push(i);
      }
      interrupts = fromRuns.length ? [...known, ...fromRuns] : known;
    }
    const previous = this.#previous;
    const next: ConversationSnapshot = {
      conversation,
      conversationId: state.conversationId,
      phase: state.phase,
      title: data?.title ?? null,
      messages: previous && sameItems(previous.messages, messages) ? previous.messages : messages,
      hasOlder: hidden > 0,
      olderCount: hidden,
      loadingOlder: state.loadingOlder,
      run,
      activeRun,
      runs: previous && sameItems(previous.runs, allRuns) ? previous.runs : allRuns,
      lastSeq: (activeRun ?? run)?.lastSeq ?? 0,
      busy,
      interrupts: previous && sameItems(previous.interrupts, interrupts) ? previous.interrupts : interrupts,
      next: previous && sameItems(previous.next, data?.next ?? EMPTY) ? previous.next : (data?.next ?? EMPTY),
      resumable: !busy && (data?.resumable ?? false),
      pending: previous && sameItems(previous.pending, pending) ? previous.pending : pending.length ? pending : EMPTY,
      connection: state.connection,
      attached: state.attached,
      error: state.error,
    };
    if (previous && (Object.keys(next) as (keyof ConversationSnapshot)[]).every((key) => Object.is(next[key], previous[key]))) return previous;
    this.#previous = next;
    return next;
  }
}

/** Every run known, oldest first: those let go (their final state) and those held. */
function allRunsOf(state: StoreState): RunState[] {
  const entries: { run: RunState; order: number }[] = [...state.past.values()].filter((p) => !state.runs.has(p.run.id));
  for (const t of state.runs.values()) entries.push({ run: t.live.run, order: t.order });
  return entries
    .sort((a, b) => {
      const x = a.run.startedAt ?? "\uffff";
      const y = b.run.startedAt ?? "\uffff";
      return x < y ? -1 : x > y ? 1 : a.order - b.order;
    })
    .map((e) => e.run);
}

/** A snapshot of `state` made afresh (no sharing with an earlier one). */
export function deriveSnapshot(state: StoreState): ConversationSnapshot {
  return new SnapshotBuilder().build(state);
}
