// The chat view the React specs render, in the browser (page.ts) and on the
// server (ssr.ts): @runledger/react's hooks and nothing else. Written with
// createElement rather than JSX, so the same file builds for React and for
// Preact through preact/compat. It counts its renders and notes what each
// showed, for the specs to read.
import { createElement as h, memo, type ReactNode } from "react";
import {
  useCheckpoints,
  useConnection,
  useConversation,
  useConversations,
  useInterrupts,
  useRun,
  type ChatMessage,
  type CheckpointListView,
  type ConversationState,
  type ConversationView,
  type InterruptsView,
  type RunView,
} from "@runledger/react";

/** One render of the chat: the conversation asked for, and what the view showed. */
export interface RenderNote {
  /** performance.now() when it rendered. */
  at: number;
  asked: string | null;
  shown: string | null;
  phase: string;
  status: string | null;
  /** The runs the messages shown came from. */
  runIds: string[];
  messages: number;
  /** Characters shown of messages still streaming. */
  streamed: number;
  /** The connection's status as rendered. */
  connection: string;
}

export const stats = {
  renders: 0,
  rowRenders: {} as Record<string, number>,
  listRenders: 0,
  notes: [] as RenderNote[],
  /** The view of the last render: the specs call its actions. */
  view: null as ConversationView | null,
  /** The checkpoint list's view of the last render. */
  checkpoints: null as CheckpointListView | null,
  /** Renders of the run panel (useRun) and of the interrupts (useInterrupts), and their last views. */
  runRenders: 0,
  run: null as RunView | null,
  interruptRenders: 0,
  interrupts: null as InterruptsView | null,
};

const Row = memo(function Row({ message }: { message: ChatMessage }): ReactNode {
  stats.rowRenders[message.id] = (stats.rowRenders[message.id] ?? 0) + 1;
  return h("li", { className: `message ${message.role.toLowerCase()}`, "data-id": message.id, "data-state": message.state }, message.content);
});

export function Chat({
  conversationId,
  initial,
  pageSize,
}: {
  conversationId: string | null;
  initial?: ConversationState | null;
  pageSize?: number;
}): ReactNode {
  const view = useConversation(conversationId, { initial, pageSize });
  const connection = useConnection();
  stats.renders++;
  stats.view = view;
  stats.notes.push({
    at: typeof performance === "undefined" ? 0 : performance.now(),
    asked: conversationId,
    shown: view.conversationId,
    phase: view.phase,
    status: view.run?.status ?? null,
    runIds: [...new Set(view.messages.map((m) => m.runId).filter((id): id is string => id !== null))],
    messages: view.messages.length,
    streamed: view.messages.reduce((n, m) => n + (m.state === "streaming" ? m.content.length : 0), 0),
    connection: connection.status,
  });
  return h(
    "section",
    {
      id: "chat",
      "data-conversation": view.conversationId ?? "",
      "data-phase": view.phase,
      "data-status": view.run?.status ?? "",
      "data-run": view.run?.id ?? "",
      "data-connection": connection.status,
      "data-older": String(view.olderCount),
      // The contract's fields: the run active now, the last seq applied, messages not stored yet, the connection as the snapshot holds it.
      "data-active-run": view.activeRun?.id ?? "",
      "data-last-seq": String(view.lastSeq),
      "data-pending": String(view.pending.length),
      "data-runs": view.runs.map((r) => r.id).join(" "),
      "data-title": view.conversation?.title ?? "",
      "data-snapshot-connection": view.connection.status,
    },
    // As text: a hydration that rendered another status than the server did is a mismatch React reports.
    h("p", { id: "connection" }, connection.status),
    h(
      "ol",
      { id: "messages" },
      view.messages.map((message) => h(Row, { key: message.id, message })),
    ),
  );
}

export function ConversationList(): ReactNode {
  const list = useConversations({ pageSize: 20 });
  stats.listRenders++;
  return h(
    "ul",
    { id: "list", "data-phase": list.phase },
    list.rows.map((row) => h("li", { key: row.id, "data-id": row.id, "data-status": row.activeRun?.status ?? row.latestRun?.status ?? "" }, row.title)),
  );
}

/** The shown conversation's checkpoints (useCheckpoints), newest page first. */
export function Checkpoints({ conversationId, pageSize }: { conversationId: string | null; pageSize?: number }): ReactNode {
  const list = useCheckpoints(conversationId, { pageSize });
  stats.checkpoints = list;
  return h(
    "ol",
    { id: "checkpoints", "data-phase": list.phase, "data-has-older": String(list.hasOlder) },
    list.checkpoints.map((c) => h("li", { key: c.id, "data-id": c.id, "data-source": c.source }, c.lastMessage?.content ?? "")),
  );
}

/** One run by its id (useRun): its status, last seq, where it is shown from, and the text it streamed. */
export function RunPanel({ runId }: { runId: string | null }): ReactNode {
  const view = useRun(runId);
  stats.runRenders++;
  stats.run = view;
  return h(
    "div",
    {
      id: "run",
      "data-run": view.runId,
      "data-phase": view.phase,
      "data-status": view.run?.status ?? "",
      "data-seq": String(view.run?.lastSeq ?? 0),
      "data-source": view.source ?? "",
      "data-conversation": view.conversationId ?? "",
    },
    view.messages.map((m) => m.content).join(""),
  );
}

/** A conversation's pending interrupts (useInterrupts). */
export function Interrupts({ conversationId }: { conversationId: string | null }): ReactNode {
  const view = useInterrupts(conversationId);
  stats.interruptRenders++;
  stats.interrupts = view;
  return h(
    "ul",
    { id: "interrupts", "data-phase": view.phase, "data-count": String(view.interrupts.length) },
    view.interrupts.map((i) => h("li", { key: i.id, "data-id": i.id, "data-kind": i.kind, "data-run": i.runId ?? "" }, i.node)),
  );
}
