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
  type ChatMessage,
  type CheckpointListView,
  type ConversationState,
  type ConversationView,
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
