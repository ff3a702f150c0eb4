// @runledger/client/testing: a transport for your own component tests. It is
// no mock of the client: it is a small runledger in memory, answering the
// client's operations as the server does (conversations, startRun with its
// idempotency key, cancelRun, resumeRun with answers, runEvents with `after`
// replay, conversationsChanged), and playing recorded runs as their events.
// Give it runs recorded from a real server (their events and the messages
// they added), and drop its connection to see your page reconnect.
import type {
  JsonValue,
  Multitask,
  RunKind,
  RunledgerConversationQuery,
  RunledgerConversationRowFragment,
  RunledgerInterruptFragment,
  RunledgerMessageFragment,
  RunledgerRunFragment,
  RunStatus,
} from "./generated.js";
import { Value } from "./observable.js";
import type { RunEvent } from "./run-log.js";
import { TransportError, type ConnectionState, type ConnectionStatus, type GraphQLResult, type Operation, type Sink, type Transport } from "./transport.js";

export type Message = RunledgerMessageFragment;

/** A run as recorded from a server: what runEvents sent, and what it added to the thread. */
export interface RecordedRun {
  /** Its events in seq order, as runEvents sent them; their runId and seq are the test transport's own when played. */
  events: RunEvent[];
  /** The messages it added to the thread (Run.messages). A START run's first, its user message, takes the message sent. */
  messages: Message[];
  /** For a run that did not complete: the text it streamed (Run.partialOutput). */
  partialOutput?: string | null;
}

export interface TestTransportOptions {
  /** What a started or resumed run plays. Default: an answer "Echo: <message>" in two tokens, COMPLETED. */
  script?: (input: { kind: RunKind; message: string | null; conversationId: string }) => RecordedRun;
  /** Play each run's events by themselves, one every `intervalMs` (default true). False: step() and finish() play them. */
  autoplay?: boolean;
  /** Milliseconds between two events of an autoplayed run (default 0: one per macrotask). */
  intervalMs?: number;
}

interface TestConversation {
  id: string;
  title: string;
  createdAt: string;
  updatedAt: string;
  messages: Message[];
  runs: string[];
  interrupts: RunledgerInterruptFragment[];
}

interface TestRun {
  record: RunledgerRunFragment;
  conversationId: string;
  /** Events published so far. */
  log: RunEvent[];
  /** Events still to play. */
  script: RunEvent[];
  added: Message[];
  partialOutput: string | null;
  streams: Set<{ sink: Sink; after: number }>;
  timer: ReturnType<typeof setTimeout> | null;
}

export interface TestTransport extends Transport {
  /** Adds a conversation with these messages; returns its id. */
  addConversation(conversation?: { id?: string; title?: string; messages?: Message[] }): string;
  /** Starts a run as another tab or a plain GraphQL call would: the client learns of it from conversationsChanged. */
  startElsewhere(conversationId: string, message: string, recorded?: RecordedRun): string;
  /** Plays the next `count` events of a run (every run with events left, when none is named). */
  step(runId?: string, count?: number): void;
  /** Plays a run's events to its end (every run's, when none is named). */
  finish(runId?: string): void;
  /** Ends every subscription as a dropped connection does, and connects again: the client must resubscribe. */
  drop(): void;
  /** Sets the connection's status, as a real transport would report it. */
  setStatus(status: ConnectionStatus): void;
  /** The operations sent so far, by their operation name, with their variables. */
  readonly sent: { name: string; variables: Record<string, unknown> }[];
  /** The stored state, as the server would answer it. */
  conversationOf(id: string): { messages: Message[]; runIds: string[] } | null;
}

let ids = 0;
function newId(): string {
  const crypto = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  return crypto?.randomUUID ? crypto.randomUUID() : `00000000-0000-4000-8000-${(++ids).toString(16).padStart(12, "0")}`;
}

function operationName(query: string): string {
  return /\b(?:query|mutation|subscription)\s+(\w+)/.exec(query)?.[1] ?? "anonymous";
}

function echo(message: string | null): RecordedRun {
  const text = `Echo: ${message ?? ""}`;
  const at = new Date(0).toISOString();
  const base = { runId: "", at };
  const messageId = `echo-${newId()}`;
  const half = Math.ceil(text.length / 2);
  return {
    events: [
      { __typename: "RunStatusEvent", seq: 1, status: "RUNNING", errorCode: null, errorMessage: null, ...base },
      { __typename: "TokenEvent", seq: 2, text: text.slice(0, half), messageId, node: "agent", ...base },
      { __typename: "TokenEvent", seq: 3, text: text.slice(half), messageId, node: "agent", ...base },
      { __typename: "RunStatusEvent", seq: 4, status: "COMPLETED", errorCode: null, errorMessage: null, ...base },
    ],
    messages: [
      { id: `user-${newId()}`, role: "USER", content: message ?? "", toolCalls: [], toolCallId: null, name: null },
      { id: messageId, role: "ASSISTANT", content: text, toolCalls: [], toolCallId: null, name: null },
    ],
  };
}

const ACTIVE = new Set<RunStatus>(["QUEUED", "RUNNING"]);

export function createTestTransport(options: TestTransportOptions = {}): TestTransport {
  const script = options.script ?? ((input) => echo(input.message));
  const autoplay = options.autoplay ?? true;
  const intervalMs = options.intervalMs ?? 0;
  const connection = new Value<ConnectionState>({ status: "connected", transport: "test", reconnects: 0 });
  const conversations = new Map<string, TestConversation>();
  const runs = new Map<string, TestRun>();
  const notices = new Set<Sink>();
  const keys = new Map<string, unknown>();
  const sent: { name: string; variables: Record<string, unknown> }[] = [];
  let disposed = false;

  const runFields = (run: TestRun): RunledgerRunFragment => ({ ...run.record });
  const active = (conversation: TestConversation) => conversation.runs.map((id) => runs.get(id)!).find((r) => ACTIVE.has(r.record.status)) ?? null;
  const latest = (conversation: TestConversation) => (conversation.runs.length ? runs.get(conversation.runs.at(-1)!)! : null);

  /** The conversation as a list shows it (RunledgerConversationRow). */
  const rowOf = (conversation: TestConversation): RunledgerConversationRowFragment => {
    const current = active(conversation)?.record;
    const last = latest(conversation)?.record;
    return {
      id: conversation.id,
      title: conversation.title,
      agentName: "default",
      owner: null,
      createdAt: conversation.createdAt,
      updatedAt: conversation.updatedAt,
      messageCount: conversation.messages.length,
      expiresAt: null,
      activeRun: current ? { id: current.id, status: current.status, startedAt: current.startedAt } : null,
      latestRun: last ? { id: last.id, status: last.status, kind: last.kind, errorCode: last.errorCode } : null,
      forkedFrom: null,
    };
  };

  /** A later time than any given so far: updatedAt orders the list. */
  let lastTime = 0;
  const now = () => {
    lastTime = Math.max(Date.now(), lastTime + 1);
    return new Date(lastTime).toISOString();
  };

  const notify = (conversation: TestConversation) => {
    conversation.updatedAt = now();
    const row = { ...rowOf(conversation), deleted: false };
    for (const sink of [...notices]) sink.next({ data: { conversationsChanged: row } });
  };

  /** Publishes the run's next event; the terminal one records its outcome first, as the server does. */
  const publish = (run: TestRun): boolean => {
    const event = run.script.shift();
    if (!event) return false;
    const stamped = { ...event, runId: run.record.id, seq: run.log.length + 1 } as RunEvent;
    const conversation = conversations.get(run.conversationId)!;
    if (stamped.__typename === "RunStatusEvent") {
      run.record = { ...run.record, status: stamped.status, errorCode: stamped.errorCode, errorMessage: stamped.errorMessage };
      if (!ACTIVE.has(stamped.status)) {
        run.record = { ...run.record, finishedAt: new Date().toISOString(), partialOutput: stamped.status === "COMPLETED" ? null : run.partialOutput };
        conversation.messages = [...conversation.messages, ...run.added];
        run.script = [];
      }
    }
    if (stamped.__typename === "InterruptEvent") conversation.interrupts.push({ ...stamped.interrupt, state: "PENDING", run: { id: run.record.id } });
    run.log.push(stamped);
    for (const stream of [...run.streams]) {
      stream.sink.next({ data: { runEvents: stamped } });
      if (stamped.__typename === "RunStatusEvent" && !ACTIVE.has(stamped.status)) {
        run.streams.delete(stream);
        stream.sink.complete();
      }
    }
    if (stamped.__typename === "RunStatusEvent" && !ACTIVE.has(stamped.status)) notify(conversation);
    return true;
  };

  const play = (run: TestRun) => {
    if (!autoplay || run.timer || disposed) return;
    run.timer = setTimeout(() => {
      run.timer = null;
      if (publish(run)) play(run);
    }, intervalMs);
  };

  const addConversation: TestTransport["addConversation"] = (conversation = {}) => {
    const id = conversation.id ?? newId();
    const at = now();
    conversations.set(id, {
      id,
      title: conversation.title ?? "Test conversation",
      createdAt: at,
      updatedAt: at,
      messages: [...(conversation.messages ?? [])],
      runs: [],
      interrupts: [],
    });
    return id;
  };

  const startRun = (conversation: TestConversation, kind: RunKind, message: string | null, recorded?: RunEvent[] | RecordedRun): TestRun => {
    const recording = recorded && !Array.isArray(recorded) ? recorded : script({ kind, message, conversationId: conversation.id });
    const id = newId();
    const added = recording.messages.map((m, i) => (i === 0 && m.role === "USER" && message !== null ? { ...m, content: message } : m));
    const queued = active(conversation) !== null;
    const run: TestRun = {
      record: {
        id,
        kind,
        status: queued ? "QUEUED" : "RUNNING",
        input: message,
        errorCode: null,
        errorMessage: null,
        partialOutput: null,
        queuePosition: queued ? 1 : null,
        queueReason: queued ? "BEHIND_ACTIVE_RUN" : null,
        startedAt: new Date().toISOString(),
        finishedAt: null,
      },
      conversationId: conversation.id,
      log: [],
      script: recording.events.map((e) => ({ ...e })),
      added,
      partialOutput: recording.partialOutput ?? null,
      streams: new Set(),
      timer: null,
    };
    runs.set(id, run);
    conversation.runs.push(id);
    // Answered questions stop waiting: a new run goes ahead of them.
    conversation.interrupts = [];
    notify(conversation);
    if (!queued) play(run);
    return run;
  };

  const refusal = (typename: string, code: string, message: string, extra: Record<string, unknown> = {}) => ({ __typename: typename, code, message, ...extra });
  const notFound = (entity: string, id: unknown) => refusal("NotFoundError", "NOT_FOUND", `No ${entity} ${String(id)}`);

  /** Answers an operation as runledger would, for the operations the client sends. */
  const answer = (name: string, variables: Record<string, unknown>): unknown => {
    const input = (variables.input ?? {}) as Record<string, unknown>;
    const once = (make: () => unknown) => {
      const key = typeof input.idempotencyKey === "string" ? `${name}:${input.idempotencyKey}` : null;
      if (key && keys.has(key)) return keys.get(key);
      const value = make();
      if (key) keys.set(key, value);
      return value;
    };
    switch (name) {
      case "RunledgerConversation": {
        const conversation = conversations.get(String(variables.id));
        if (!conversation) return { conversation: null };
        const current = active(conversation);
        const last = latest(conversation);
        const data: NonNullable<RunledgerConversationQuery["conversation"]> = {
          id: conversation.id,
          title: conversation.title,
          agentName: "default",
          expiresAt: null,
          next: [],
          resumable: false,
          messages: conversation.messages,
          activeRun: current
            ? {
                ...runFields(current),
                messages: current.record.status === "RUNNING" && current.added[0] ? [{ id: current.added[0].id, role: current.added[0].role }] : [],
              }
            : null,
          latestRun: last ? runFields(last) : null,
          pendingInterrupts: current ? [] : conversation.interrupts.filter((i) => i.state === "PENDING"),
        };
        // A running run's input is in the thread from its first checkpoint on.
        if (current?.record.status === "RUNNING" && current.added[0]?.role === "USER") data.messages = [...conversation.messages, current.added[0]];
        return { conversation: data };
      }
      case "RunledgerConversations": {
        const rows = [...conversations.values()]
          .map(rowOf)
          .sort((a, b) => (a.updatedAt !== b.updatedAt ? (a.updatedAt < b.updatedAt ? 1 : -1) : a.id < b.id ? 1 : -1));
        const first = Math.min(100, Number(variables.first ?? 30));
        const start = variables.after ? rows.findIndex((r) => r.id === variables.after) + 1 : 0;
        const page = rows.slice(start, start + first);
        return {
          conversations: {
            edges: page.map((node) => ({ node })),
            pageInfo: { hasNextPage: start + first < rows.length, endCursor: page.at(-1)?.id ?? null },
          },
        };
      }
      case "RunledgerCheckpoints": {
        // The test transport keeps no checkpoints: a conversation's list is empty.
        const conversation = conversations.get(String(variables.id));
        if (!conversation) return { conversation: null };
        const pageInfo = { hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null };
        return { conversation: { id: conversation.id, checkpoints: { edges: [], pageInfo } } };
      }
      case "RunledgerRunRecord": {
        const run = runs.get(String(variables.id));
        if (!run) return { run: null };
        const ended = !ACTIVE.has(run.record.status);
        return { run: { ...runFields(run), conversation: { id: run.conversationId }, messages: ended ? run.added : run.added.slice(0, 1) } };
      }
      case "RunledgerStartRun":
        return {
          startRun: once(() => {
            let conversation = input.conversationId ? conversations.get(String(input.conversationId)) : undefined;
            if (input.conversationId && !conversation) return notFound("conversation", input.conversationId);
            if (!conversation) conversation = conversations.get(addConversation({ title: String(input.message).split("\n")[0] }))!;
            const current = active(conversation);
            const multitask = (input.multitask ?? "REJECT") as Multitask;
            if (current && multitask === "REJECT") {
              return refusal("RunInProgressError", "RUN_IN_PROGRESS", "The conversation already has a running run.", { activeRunId: current.record.id });
            }
            if (current && multitask !== "ENQUEUE") cancel(current);
            const run = startRun(conversation, "START", String(input.message));
            return { __typename: "StartRunSuccess", run: runFields(run), conversation: { id: conversation.id, title: conversation.title } };
          }),
        };
      case "RunledgerCancelRun":
        return {
          cancelRun: once(() => {
            const run = runs.get(String(input.runId));
            if (!run) return notFound("run", input.runId);
            if (!ACTIVE.has(run.record.status)) return refusal("RunNotActiveError", "RUN_NOT_ACTIVE", "The run has already finished.");
            cancel(run);
            return { __typename: "CancelRunSuccess", run: runFields(run) };
          }),
        };
      case "RunledgerResumeRun":
        return {
          resumeRun: once(() => {
            const conversation = conversations.get(String(input.conversationId));
            if (!conversation) return notFound("conversation", input.conversationId);
            if (active(conversation))
              return refusal("RunInProgressError", "RUN_IN_PROGRESS", "The conversation already has a running run.", {
                activeRunId: active(conversation)!.record.id,
              });
            const pending = conversation.interrupts.filter((i) => i.state === "PENDING").map((i) => i.id);
            const answered = ((input.responses ?? []) as { interruptId: string }[]).map((r) => r.interruptId);
            if (pending.length !== answered.length || pending.some((id) => !answered.includes(id))) {
              return refusal("InterruptMismatchError", "INTERRUPT_MISMATCH", "The answers do not match what the thread waits for.", {
                pendingInterruptIds: pending,
              });
            }
            const run = startRun(conversation, "RESUME", null);
            return { __typename: "ResumeRunSuccess", run: runFields(run) };
          }),
        };
      default: {
        const field = name.replace(/^Runledger/, "").replace(/^./, (c) => c.toLowerCase());
        return { [field]: refusal("ValidationError", "VALIDATION", `${name} is not played by the test transport`, { field: "input" }) };
      }
    }
  };

  const cancel = (run: TestRun) => {
    run.script = [
      {
        __typename: "RunStatusEvent",
        seq: 0,
        runId: run.record.id,
        at: new Date().toISOString(),
        status: "CANCELLED",
        errorCode: "CANCELLED",
        errorMessage: "Cancelled.",
      },
    ];
    if (run.timer) clearTimeout(run.timer);
    run.timer = null;
    publish(run);
    const conversation = conversations.get(run.conversationId)!;
    const next = conversation.runs.map((id) => runs.get(id)!).find((r) => r.record.status === "QUEUED");
    if (next) {
      next.record = { ...next.record, status: "RUNNING", queuePosition: null, queueReason: null };
      play(next);
    }
  };

  const transport: TestTransport = {
    connection,
    sent,
    async request<T>(operation: Operation): Promise<GraphQLResult<T>> {
      if (disposed) throw new TransportError("network", "the test transport is disposed");
      const name = operationName(operation.query);
      sent.push({ name, variables: operation.variables ?? {} });
      await Promise.resolve();
      return { data: answer(name, operation.variables ?? {}) as T };
    },
    subscribe(operation, sink) {
      const name = operationName(operation.query);
      sent.push({ name, variables: operation.variables ?? {} });
      const anySink = sink as Sink;
      let ended = false;
      if (name === "RunledgerConversationsChanged") {
        notices.add(anySink);
        return () => {
          ended = true;
          notices.delete(anySink);
        };
      }
      const run = runs.get(String(operation.variables?.runId));
      if (name !== "RunledgerRunEvents" || !run) {
        queueMicrotask(
          () => !ended && anySink.error([{ message: `Run ${String(operation.variables?.runId)} does not exist`, extensions: { code: "NOT_FOUND" } }]),
        );
        return () => {
          ended = true;
        };
      }
      const after = Number(operation.variables?.after ?? 0);
      const stream = { sink: anySink, after };
      queueMicrotask(() => {
        if (ended) return;
        for (const event of run.log) if (event.seq > after) anySink.next({ data: { runEvents: event } });
        if (!ACTIVE.has(run.record.status) && run.log.length > 0) return anySink.complete();
        run.streams.add(stream);
      });
      return () => {
        ended = true;
        run.streams.delete(stream);
      };
    },
    reconnect() {},
    async dispose() {
      disposed = true;
      for (const run of runs.values()) if (run.timer) clearTimeout(run.timer);
    },
    addConversation,
    startElsewhere(conversationId, message, recorded) {
      const conversation = conversations.get(conversationId);
      if (!conversation) throw new Error(`no conversation ${conversationId}`);
      return startRun(conversation, "START", message, recorded).record.id;
    },
    step(runId, count = 1) {
      const targets = runId ? [runs.get(runId)!] : [...runs.values()];
      for (const run of targets) for (let i = 0; i < count; i++) if (!publish(run)) break;
    },
    finish(runId) {
      const targets = runId ? [runs.get(runId)!] : [...runs.values()];
      for (const run of targets) while (publish(run));
    },
    drop() {
      const state = connection.getSnapshot();
      connection.set({ ...state, status: "reconnecting" });
      for (const run of runs.values()) {
        for (const stream of [...run.streams]) {
          run.streams.delete(stream);
          stream.sink.error(new TransportError("closed", "the test transport dropped its connection"));
        }
      }
      for (const sink of [...notices]) {
        notices.delete(sink);
        sink.error(new TransportError("closed", "the test transport dropped its connection"));
      }
      connection.set({ ...connection.getSnapshot(), status: "connected", reconnects: state.reconnects + 1 });
    },
    setStatus(status) {
      connection.set({ ...connection.getSnapshot(), status });
    },
    conversationOf(id) {
      const conversation = conversations.get(id);
      return conversation ? { messages: [...conversation.messages], runIds: [...conversation.runs] } : null;
    },
  };
  return transport;
}

export type { JsonValue };
