// The left pane: every conversation, newest activity first, each with the
// status of its latest run (WAITING: it asks a person something) and its
// agent when not the default (and its owner, to an admin), kept current by
// conversationsChanged.
import type { ComponentChildren } from "preact";
import type { ListState } from "../state/conversation-list.ts";
import { StatusBadge } from "./bits.tsx";
import { formatDateTime } from "./format.ts";
import { OwnerTag } from "./Owner.tsx";
import { conversationHref, NEW_CONVERSATION_HREF } from "./routes.ts";

export function ConversationList(props: {
  list: ListState;
  error: string | null;
  selectedId: string | null;
  showOwners: boolean;
  /** Shown under the heading: an admin's owner filter. */
  filter?: ComponentChildren;
  onLoadMore: () => void;
  loadingMore: boolean;
}) {
  const { list, error, selectedId } = props;
  return (
    <nav aria-label="Conversations" class="sidebar">
      <div class="sidebar-head">
        <h2>Conversations</h2>
        <a href={NEW_CONVERSATION_HREF} class="button" aria-label="New conversation">
          New
        </a>
      </div>
      {props.filter}
      {error && (
        <p role="alert" class="notice">
          {error}
        </p>
      )}
      {list.rows.length === 0 && <p class="hint">{list.owner === null ? "No conversations yet." : `No conversations of ${list.owner}.`}</p>}
      <ul class="conversation-list">
        {list.rows.map((row) => {
          const run = row.activeRun ?? row.latestRun;
          return (
            <li key={row.id}>
              <a href={conversationHref(row.id)} aria-current={row.id === selectedId ? "page" : undefined}>
                <span class="conversation-title">{row.title}</span>
                <span class="conversation-meta">
                  <StatusBadge status={run?.status} code={row.activeRun ? null : row.latestRun?.errorCode} />
                  {row.agentName !== "default" && <span class="agent-name">{row.agentName}</span>}
                  {props.showOwners && <OwnerTag owner={row.owner} />}
                  <span>
                    {row.messageCount} {row.messageCount === 1 ? "message" : "messages"}
                  </span>
                  <time dateTime={row.updatedAt}>{formatDateTime(row.updatedAt)}</time>
                </span>
              </a>
            </li>
          );
        })}
      </ul>
      {list.hasMore && (
        <button type="button" onClick={props.onLoadMore} disabled={props.loadingMore}>
          {props.loadingMore ? "Loading…" : "Load more"}
        </button>
      )}
    </nav>
  );
}
