// One run as this client has received it: its status as the server last said
// it, and what it streamed, built from its events in seq order, each applied
// at most once. A seq that skips ahead, or a ReplayGapEvent, is a gap: it is
// recorded (never papered over) until the run's stored record fills it in.
import type {
  JsonValue,
  MessageRole,
  QueueReason,
  RunErrorCode,
  RunKind,
  RunledgerMessageFragment,
  RunledgerRunEventsSubscription,
  RunledgerRunFragment,
  RunStatus,
} from "./generated.js";
import { toPendingInterrupt, type PendingInterrupt } from "./interrupts.js";

/** Every event of a run, as the client selects it; __typename tells which fields are set. */
export type RunEvent = RunledgerRunEventsSubscription["runEvents"];

export interface ToolCall {
  id: string;
  name: string;
  args: JsonValue;
}

/**
 * - `sending`: the user's message, shown at once, not yet accepted by the server;
 * - `unsent`: the server refused it, or could not be reached (`error` says why);
 * - `streaming`: arrived in a run's events, not yet read back from the thread;
 * - `stored`: the thread's own message, with the server's id;
 * - `partial`: what a run that failed, was cancelled or interrupted streamed before it stopped (not in the thread).
 */
export type MessageState = "sending" | "unsent" | "streaming" | "stored" | "partial";

export interface ChatMessage {
  /** The thread's id for it once stored; until then a temporary one. */
  id: string;
  role: MessageRole;
  content: string;
  toolCalls: readonly ToolCall[];
  /** A tool result's call. */
  toolCallId: string | null;
  /** A tool result's tool. */
  name: string | null;
  /** The run that added it, when known. */
  runId: string | null;
  state: MessageState;
  /** The start of its text was in a gap (events the server no longer kept) and the stored text has not replaced it yet. */
  incomplete?: boolean;
  /** A tool result that is an error. */
  isError?: boolean;
  /** Why an `unsent` message was not sent. */
  error?: { code: string; message: string };
}

/** Events fromSeq..toSeq that this client never received. `refilled` once the run's stored record has been applied in their place. */
export interface Gap {
  fromSeq: number;
  toSeq: number;
  refilled: boolean;
}

/** A run as the server reports it, and how far this client has read its events. */
export interface RunState {
  id: string;
  /** Null until read (a run learned of from its events alone). */
  kind: RunKind | null;
  status: RunStatus;
  /** The user message of a START run. */
  input: string | null;
  /** While QUEUED: its place among the runs waiting for the same model (1 is next). */
  queuePosition: number | null;
  /** While QUEUED: why it waits. */
  queueReason: QueueReason | null;
  errorCode: RunErrorCode | null;
  errorMessage: string | null;
  /** Text streamed before a failure, cancel or interruption. */
  partialOutput: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  /** The last seq applied: a rejoin asks for `after: lastSeq`. */
  lastSeq: number;
  gaps: readonly Gap[];
}

/** A custom graph's CustomEvent, as it streamed. */
export interface CustomItem {
  seq: number;
  name: string;
  data: JsonValue | null;
}

/** What one run streamed, and its state: plain JSON, so it can be kept in storage and handed from a server render. */
export interface LiveRun {
  run: RunState;
  /** The messages its events made, in order. */
  messages: readonly ChatMessage[];
  interrupts: readonly PendingInterrupt[];
  custom: readonly CustomItem[];
  /** CheckpointEvents applied: the first one means its input is in the thread. */
  checkpoints: number;
}

/** Any status but QUEUED and RUNNING ends a run (WAITING too: an answer is a new run). */
export function isTerminal(status: RunStatus): boolean {
  return status !== "QUEUED" && status !== "RUNNING";
}

export function emptyRun(id: string, status: RunStatus = "RUNNING"): RunState {
  return {
    id,
    kind: null,
    status,
    input: null,
    queuePosition: null,
    queueReason: null,
    errorCode: null,
    errorMessage: null,
    partialOutput: null,
    startedAt: null,
    finishedAt: null,
    lastSeq: 0,
    gaps: [],
  };
}

export function liveRun(run: RunState): LiveRun {
  return { run, messages: [], interrupts: [], custom: [], checkpoints: 0 };
}

/** The run's fields from a read (a mutation's answer, the run query); what its events said later wins. */
export function withRecord(run: RunState, record: RunledgerRunFragment): RunState {
  // The events said it ended: an earlier read's RUNNING must not bring it back.
  const status = isTerminal(run.status) && run.lastSeq > 0 ? run.status : record.status;
  const ended = isTerminal(status);
  return {
    ...run,
    kind: record.kind,
    input: record.input,
    status,
    queuePosition: status === "QUEUED" ? record.queuePosition : null,
    queueReason: status === "QUEUED" ? record.queueReason : null,
    errorCode: ended ? (record.status === status ? record.errorCode : run.errorCode) : null,
    errorMessage: ended ? (record.status === status ? record.errorMessage : run.errorMessage) : null,
    partialOutput: record.partialOutput ?? run.partialOutput,
    startedAt: record.startedAt,
    finishedAt: record.finishedAt ?? run.finishedAt,
  };
}

function streamed(runId: string, role: MessageRole, id: string, patch: Partial<ChatMessage>): ChatMessage {
  return { id, role, content: "", toolCalls: [], toolCallId: null, name: null, runId, state: "streaming", ...patch };
}

/** Applies one event; the same object when it changes nothing (a duplicate, another run's). */
export function applyEvent(live: LiveRun, event: RunEvent): LiveRun {
  const { run } = live;
  if (event.runId !== run.id || event.seq <= run.lastSeq) return live;
  let gaps = run.gaps;
  if (event.__typename === "ReplayGapEvent") gaps = [...gaps, { fromSeq: event.fromSeq, toSeq: event.toSeq, refilled: false }];
  else if (event.seq > run.lastSeq + 1) gaps = [...gaps, { fromSeq: run.lastSeq + 1, toSeq: event.seq - 1, refilled: false }];
  const gapped = gaps !== run.gaps;
  const next: LiveRun = { ...live, run: { ...run, lastSeq: event.seq, gaps } };
  // Any text still streaming may have had tokens in the gap: marked until the stored record replaces it.
  const messages = gapped
    ? live.messages.map((m) => (m.role === "ASSISTANT" && m.state === "streaming" && !m.incomplete ? { ...m, incomplete: true } : m))
    : live.messages;
  next.messages = messages;
  switch (event.__typename) {
    case "RunStatusEvent": {
      const ended = isTerminal(event.status);
      next.run = {
        ...next.run,
        status: event.status,
        errorCode: event.errorCode,
        errorMessage: event.errorMessage,
        queuePosition: event.status === "QUEUED" ? next.run.queuePosition : null,
        queueReason: event.status === "QUEUED" ? next.run.queueReason : null,
        finishedAt: ended ? event.at : null,
      };
      return next;
    }
    case "TokenEvent": {
      const id = event.messageId ?? `${run.id}:text:${event.node}`;
      const index = messages.findIndex((m) => m.id === id);
      const existing = index >= 0 ? messages[index]! : null;
      if (existing) {
        // Stored: the thread's text is whole already.
        if (existing.state === "stored") return next;
        const updated = { ...existing, content: existing.content + event.text, ...(gapped ? { incomplete: true } : {}) };
        next.messages = messages.map((m, i) => (i === index ? updated : m));
      } else {
        next.messages = [...messages, streamed(run.id, "ASSISTANT", id, { content: event.text, ...(gapped ? { incomplete: true } : {}) })];
      }
      return next;
    }
    case "ToolCallEvent": {
      // A call in doubt that runs again is told again: it is the same call.
      if (messages.some((m) => m.toolCalls.some((c) => c.id === event.toolCallId))) return next;
      const call: ToolCall = { id: event.toolCallId, name: event.name, args: event.args };
      const last = messages.at(-1);
      if (last && last.role === "ASSISTANT" && last.state === "streaming") {
        next.messages = [...messages.slice(0, -1), { ...last, toolCalls: [...last.toolCalls, call] }];
      } else {
        next.messages = [...messages, streamed(run.id, "ASSISTANT", `${run.id}:call:${event.toolCallId}`, { toolCalls: [call] })];
      }
      return next;
    }
    case "ToolResultEvent": {
      const result = streamed(run.id, "TOOL", `${run.id}:result:${event.toolCallId}`, {
        content: event.content,
        toolCallId: event.toolCallId,
        name: event.name,
        isError: event.isError,
      });
      const index = messages.findIndex((m) => m.role === "TOOL" && m.toolCallId === event.toolCallId);
      if (index >= 0 && messages[index]!.state === "stored") return next;
      next.messages = index >= 0 ? messages.map((m, i) => (i === index ? result : m)) : [...messages, result];
      return next;
    }
    case "CheckpointEvent":
      next.checkpoints = live.checkpoints + 1;
      return next;
    case "CustomEvent":
      next.custom = [...live.custom, { seq: event.seq, name: event.name, data: event.data }];
      return next;
    case "InterruptEvent":
      if (!live.interrupts.some((i) => i.id === event.interrupt.id)) next.interrupts = [...live.interrupts, toPendingInterrupt(event.interrupt)];
      return next;
    default:
      // ReplayGapEvent (recorded above), or an event type this client does not know yet: counted, not shown.
      return next;
  }
}

/** Whether a stored message stands for this streamed one: the same id, the same tool result, or every call it carries. */
function covers(stored: readonly ChatMessage[], message: ChatMessage): boolean {
  return stored.some(
    (s) =>
      s.id === message.id ||
      (message.role === "TOOL" && s.role === "TOOL" && s.toolCallId === message.toolCallId) ||
      (message.toolCalls.length > 0 && message.toolCalls.every((c) => s.toolCalls.some((d) => d.id === c.id))),
  );
}

export function storedMessage(message: RunledgerMessageFragment, runId: string | null): ChatMessage {
  return {
    id: message.id,
    role: message.role,
    content: message.content,
    toolCalls: message.toolCalls,
    toolCallId: message.toolCallId,
    name: message.name,
    runId,
    state: "stored",
  };
}

/**
 * Applies the run's stored record in place of what its events did not bring:
 * the messages its checkpoints hold replace the streamed ones they stand for,
 * and for a run that stopped early, its partial output replaces streamed text
 * a gap cut into. Its gaps are then marked refilled.
 */
export function refill(live: LiveRun, record: RunledgerRunFragment & { messages: readonly RunledgerMessageFragment[] }): LiveRun {
  const run = withRecord(live.run, record);
  const stored = record.messages.map((m) => storedMessage(m, run.id));
  let rest = live.messages.filter((m) => m.state !== "stored" && !covers(stored, m));
  const ended = isTerminal(run.status);
  if (ended && run.status !== "COMPLETED" && run.partialOutput !== null && run.gaps.length > 0) {
    // partialOutput is all the text the run streamed: what its stored messages do not hold is what stopped mid-way.
    const storedText = stored.filter((m) => m.role === "ASSISTANT").map((m) => m.content);
    let unsaved = run.partialOutput;
    for (const text of storedText) if (text && unsaved.startsWith(text)) unsaved = unsaved.slice(text.length);
    const text = rest.filter((m) => m.role === "ASSISTANT" && m.toolCalls.length === 0);
    if (text.map((m) => m.content).join("") !== unsaved) {
      const first = text[0];
      rest = rest.filter((m) => !text.includes(m));
      if (unsaved) rest.push({ ...(first ?? streamed(run.id, "ASSISTANT", `${run.id}:partial`, {})), content: unsaved, incomplete: false });
    } else {
      rest = rest.map((m) => (m.incomplete ? { ...m, incomplete: false } : m));
    }
  }
  // Otherwise, what a gap cut into and the thread does not hold yet stays marked incomplete.
  return { ...live, run: { ...run, gaps: run.gaps.map((g) => (g.refilled ? g : { ...g, refilled: true })) }, messages: [...stored, ...rest] };
}
