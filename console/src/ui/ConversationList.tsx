// The left pane: every conversation, newest activity first, each with the
// status of its latest run (WAITING: it asks a person something) and its
// agent when not the default (and its owner, to an admin), kept current by
// conversationsChanged.
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import type { ConversationRow } from "../api/types.ts";
import type { ListView } from "./hooks.ts";
import { StatusBadge } from "./bits.tsx";
import { formatDateTime } from "./format.ts";
import { OwnerTag } from "./Owner.tsx";
import { conversationHref, NEW_CONVERSATION_HREF } from "./routes.ts";

export function ConversationList(props: {
  list: ListView;
  error: string | null;
  selectedId: string | null;
  showOwners: boolean;
  /** Shown under the heading: an admin's owner filter. */
  filter?: ComponentChildren;
  onLoadMore: () => void;
  loadingMore: boolean;
  /** A conversation was picked (on a narrow screen the chat is shown, even for the one already open). */
  onPick?: () => void;
}) {
  const { list, error, selectedId } = props;
  const [query, setQuery] = useState("");
  const [status, setStatus] = useState("");
  const rows = list.rows.filter((row) => matches(row, query, status));
  const filtering = query.trim() !== "" || status !== "";
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
      <div class="list-search" role="search" aria-label="Search conversations">
        <input type="search" aria-label="Search" placeholder="Search titles and agents" value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
        <select aria-label="Status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
          {STATUS_FILTERS.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </div>
      {list.rows.length === 0 && <p class="hint">{list.owner === null ? "No conversations yet." : `No conversations of ${list.owner}.`}</p>}
      {list.rows.length > 0 && filtering && (
        <p class="hint" role="status" aria-label="Search result">
          {rows.length} of {list.rows.length} listed {list.rows.length === 1 ? "conversation matches" : "conversations match"}
          {list.hasMore ? " (Load more searches older ones too)" : ""}.
        </p>
      )}
      <ul class="conversation-list">
        {rows.map((row) => {
          const run = row.activeRun ?? row.latestRun;
          const fork = row.forkedFrom;
          return (
            <li key={row.id}>
              <a
                href={conversationHref(row.id)}
                onClick={props.onPick}
                aria-current={row.id === selectedId ? "page" : undefined}
                class={fork ? "conversation-fork" : undefined}
              >
                <span class="conversation-title">{row.title}</span>
                {fork && (
                  <span class="fork-tag" title={fork.conversation ? `Forked from ${fork.conversation.title}` : "Forked from a deleted conversation"}>
                    fork of {fork.conversation ? fork.conversation.title : "a deleted conversation"}
                  </span>
                )}
                <span class="conversation-meta">
                  <StatusBadge status={run?.status} code={row.activeRun ? null : row.latestRun?.errorCode} />
                  {row.agentName !== "default" && <span class="agent-name">{row.agentName}</span>}
                  {props.showOwners && <OwnerTag owner={row.owner} />}
                  {/* The count is the thread's after a run ends: none yet while the first one runs. */}
                  {!(row.messageCount === 0 && row.activeRun) && (
                    <span>
                      {row.messageCount} {row.messageCount === 1 ? "message" : "messages"}
                    </span>
                  )}
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

const STATUS_FILTERS: [string, string][] = [
  ["", "Any status"],
  ["RUNNING", "Running"],
  ["WAITING", "Waiting"],
  ["FAILED", "Failed"],
  ["INTERRUPTED", "Interrupted"],
  ["CANCELLED", "Cancelled"],
  ["COMPLETED", "Completed"],
  ["NONE", "No runs"],
];

/** The listed conversations a search keeps: words found in the title, agent or id (any case), and the latest run's status. */
function matches(row: ConversationRow, query: string, status: string): boolean {
  const current = (row.activeRun ?? row.latestRun)?.status ?? "NONE";
  // QUEUED is about to run: it counts as running.
  if (status && current !== status && !(status === "RUNNING" && current === "QUEUED")) return false;
  const haystack = `${row.title} ${row.agentName} ${row.id} ${row.forkedFrom?.conversation?.title ?? ""}`.toLowerCase();
  return query
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .every((word) => haystack.includes(word));
}
