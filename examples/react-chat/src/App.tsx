// The app: the conversation list beside the open conversation, the
// connection's state in the header. The URL names the conversation (?c=); on
// a phone the list opens from the header's menu button.
import { useCallback, useEffect, useState, useSyncExternalStore } from "react";
import { useConnection, useConversations, type ConversationState } from "@runledger/react";
import { Chat } from "./Chat.tsx";

export interface AppProps {
  conversationId: string | null;
  /** The state the server rendered the conversation from. */
  initial: ConversationState | null;
}

export function App({ conversationId, initial }: AppProps) {
  const [selected, setSelected] = useState(conversationId);
  const [menuOpen, setMenuOpen] = useState(false);

  const select = useCallback((id: string | null) => {
    setSelected(id);
    setMenuOpen(false);
    const url = new URL(id ? `?c=${encodeURIComponent(id)}` : location.pathname, location.href).href;
    if (url !== location.href) history.pushState(null, "", url);
  }, []);
  useEffect(() => {
    const onPop = () => setSelected(new URLSearchParams(location.search).get("c"));
    addEventListener("popstate", onPop);
    return () => removeEventListener("popstate", onPop);
  }, []);

  return (
    <div className={menuOpen ? "app menu-open" : "app"}>
      <header className="bar">
        <button type="button" className="menu" aria-label="Conversations" aria-expanded={menuOpen} onClick={() => setMenuOpen((open) => !open)}>
          ☰
        </button>
        <h1>runledger chat</h1>
        <ConnectionBadge />
      </header>
      <aside className="sidebar">
        <Conversations selected={selected} onSelect={select} />
      </aside>
      <main className="main">
        <Chat conversationId={selected} initial={initial} onOpened={select} />
      </main>
    </div>
  );
}

const LABELS = { connecting: "Connecting…", connected: "Live", reconnecting: "Reconnecting…", unauthorized: "Signed out", offline: "Offline" };

/** False on the server and while hydrating, then true: what differs between the two renders waits for it. */
function useHydrated(): boolean {
  return useSyncExternalStore(
    noSubscription,
    () => true,
    () => false,
  );
}
const noSubscription = () => () => {};

function ConnectionBadge() {
  const connection = useConnection();
  // The server's render knows no connection: show what it showed until hydrated.
  const status = useHydrated() ? connection.status : "connecting";
  return (
    <span id="connection" className={`badge ${status}`} data-status={status} data-reconnects={connection.reconnects} title={`over ${connection.transport}`}>
      {LABELS[status]}
    </span>
  );
}

function Conversations({ selected, onSelect }: { selected: string | null; onSelect: (id: string | null) => void }) {
  const list = useConversations({ pageSize: 30 });
  return (
    <nav aria-label="Conversations" className="conversations" data-phase={list.phase}>
      <button type="button" className="new" onClick={() => onSelect(null)}>
        New conversation
      </button>
      {list.phase === "loading" && <p className="muted">Loading…</p>}
      {list.error && <p className="muted">{list.error.message}</p>}
      <ul>
        {list.rows.map((row) => {
          const status = row.activeRun?.status ?? row.latestRun?.status ?? "";
          return (
            <li key={row.id} data-id={row.id} data-status={status}>
              <button type="button" aria-current={row.id === selected ? "page" : undefined} onClick={() => onSelect(row.id)}>
                <span className="title">{row.title || "Untitled"}</span>
                <span className={`status ${status.toLowerCase()}`}>{status.toLowerCase()}</span>
              </button>
            </li>
          );
        })}
      </ul>
      {list.hasMore && (
        <button type="button" className="more" disabled={list.loadingMore} onClick={() => void list.loadMore()}>
          More
        </button>
      )}
    </nav>
  );
}
