// The console's frame: the API token, the connection, the selected
// conversation (kept in the URL's fragment so a reload returns to it) and the
// three panes.
import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import { Api } from "../api/client.ts";
import type { StartedRun } from "../state/conversation-view.ts";
import { ConnectionBadge } from "./bits.tsx";
import { ConversationList } from "./ConversationList.tsx";
import { ConversationPane, NewConversationPane } from "./ConversationPane.tsx";
import { useConnection, useConversationList, usePrincipal } from "./hooks.ts";
import { showsOwners } from "./Owner.tsx";
import { OwnerFilter } from "./OwnerFilter.tsx";
import { conversationHref, NEW_CONVERSATION_HREF, readSelection, type Selection } from "./routes.ts";
import { SignedIn } from "./SignedIn.tsx";

const TOKEN_KEY = "runledger.apiToken";

function readToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null; // storage disabled: the token lives only as long as the page
  }
}

function storeToken(token: string | null): void {
  try {
    if (token === null) sessionStorage.removeItem(TOKEN_KEY);
    else sessionStorage.setItem(TOKEN_KEY, token);
  } catch {
    // As above: nothing to keep it in.
  }
}

export function App() {
  const [token, setToken] = useState<string | null>(readToken);
  const [api, setApi] = useState<Api | null>(null);

  useEffect(() => {
    const next = new Api(token);
    setApi(next);
    return () => next.dispose();
  }, [token]);

  const changeToken = useCallback((next: string | null) => {
    // A new token is kept once the server accepts it (see Connected); forgetting one is immediate.
    if (next === null) storeToken(null);
    setToken(next);
  }, []);

  if (!api || api.token !== token) return null;
  return <Connected key={api.id} api={api} onToken={changeToken} />;
}

function Connected({ api, onToken }: { api: Api; onToken: (token: string | null) => void }) {
  const connection = useConnection(api);
  // The panes appear once the server has accepted the connection: a server
  // that needs a token gets the token form instead of an empty console.
  const [accepted, setAccepted] = useState(false);
  useEffect(() => {
    if (connection.status !== "connected") return;
    setAccepted(true);
    if (api.token) storeToken(api.token);
  }, [connection.status, api]);

  if (connection.status === "unauthorized") return <TokenForm hadToken={api.token !== null} onSubmit={onToken} />;
  if (!accepted) {
    return (
      <div class="splash">
        <h1>runledger console</h1>
        <p>
          Connecting to the server: <ConnectionBadge status={connection.status} />
        </p>
      </div>
    );
  }
  return <Console api={api} reconnects={connection.reconnects} status={connection.status} onForgetToken={api.token ? () => onToken(null) : null} />;
}

function TokenForm({ hadToken, onSubmit }: { hadToken: boolean; onSubmit: (token: string) => void }) {
  const [value, setValue] = useState("");
  return (
    <div class="splash">
      <h1>runledger console</h1>
      <form
        aria-label="API token"
        class="token-form"
        onSubmit={(event) => {
          event.preventDefault();
          if (value.trim()) onSubmit(value.trim());
        }}
      >
        {hadToken ? (
          <p role="alert">The server refused this token. Check it and try again.</p>
        ) : (
          <p>This server needs its API token (the API_TOKEN it was started with).</p>
        )}
        <label>
          API token
          <input type="password" name="token" autocomplete="off" required value={value} onInput={(e) => setValue(e.currentTarget.value)} />
        </label>
        <button type="submit">Connect</button>
        <p class="hint">The token stays in this browser tab (session storage) and is sent only to this server.</p>
      </form>
    </div>
  );
}

function Console({
  api,
  reconnects,
  status,
  onForgetToken,
}: {
  api: Api;
  reconnects: number;
  status: ReturnType<typeof useConnection>["status"];
  onForgetToken: (() => void) | null;
}) {
  const { principal, error: principalError } = usePrincipal(api, reconnects);
  const showOwners = showsOwners(principal);
  const [ownerFilter, setOwnerFilter] = useState<string | null>(null);
  const { list, error, loadMore, loadingMore } = useConversationList(api, ownerFilter);
  const knownOwners = useMemo(() => [...new Set(list.rows.flatMap((r) => (r.owner === null ? [] : [r.owner])))].sort(), [list.rows]);
  const [selection, setSelection] = useState<Selection>(readSelection);
  // The run a new conversation's first message (or a fork's) started, handed to that conversation's pane.
  const [handoff, setHandoff] = useState<{ conversationId: string; run: StartedRun } | null>(null);
  const openConversation = useCallback((conversationId: string, run: StartedRun | null) => {
    setHandoff(run ? { conversationId, run } : null);
    location.hash = conversationHref(conversationId);
  }, []);

  // On a narrow screen the three panes are three views; opening a conversation shows it.
  const [view, setView] = useState<PhoneView>(() => (readSelection().kind === "none" ? "list" : "chat"));
  useEffect(() => {
    const onHash = () => {
      const next = readSelection();
      setSelection(next);
      if (next.kind !== "none") setView("chat");
    };
    addEventListener("hashchange", onHash);
    return () => removeEventListener("hashchange", onHash);
  }, []);

  const selectedId = selection.kind === "conversation" ? selection.id : null;
  const row = selectedId ? list.rows.find((r) => r.id === selectedId) : undefined;

  return (
    <div class={`console view-${view}`}>
      <header class="topbar">
        <h1>runledger console</h1>
        <ConnectionBadge status={status} />
        {status !== "connected" && <span class="hint">Live updates are paused; the console catches up once it is connected again.</span>}
        <SignedIn principal={principal} error={principalError} onForgetToken={onForgetToken} />
      </header>
      <PhoneTabs view={view} onView={setView} />
      <ConversationList
        showOwners={showOwners}
        filter={showOwners && <OwnerFilter owner={ownerFilter} known={knownOwners} onChange={setOwnerFilter} />}
        list={list}
        error={error}
        selectedId={selectedId}
        onLoadMore={loadMore}
        loadingMore={loadingMore}
        onPick={() => setView("chat")}
      />
      {selection.kind === "new" && <NewConversationPane api={api} connected={status === "connected"} onStarted={openConversation} />}
      {selectedId && (
        <ConversationPane
          key={selectedId}
          api={api}
          id={selectedId}
          row={row}
          showOwner={showOwners}
          deleted={list.deleted.has(selectedId)}
          reconnects={reconnects}
          connected={status === "connected"}
          handoff={handoff?.conversationId === selectedId ? handoff.run : null}
          onOpen={openConversation}
        />
      )}
      {selection.kind === "none" && (
        <main class="chat empty" aria-label="Conversation">
          <p>
            Pick a conversation, or <a href={NEW_CONVERSATION_HREF}>start a new one</a>.
          </p>
        </main>
      )}
    </div>
  );
}

type PhoneView = "list" | "chat" | "inspector";

const PHONE_VIEWS: { view: PhoneView; label: string }[] = [
  { view: "list", label: "Conversations" },
  { view: "chat", label: "Chat" },
  { view: "inspector", label: "Runs" },
];

/** The tab bar of a narrow screen (hidden on a wide one, where the three panes sit side by side). */
function PhoneTabs({ view, onView }: { view: PhoneView; onView: (view: PhoneView) => void }) {
  return (
    <div class="phone-tabs" role="tablist" aria-label="Views">
      {PHONE_VIEWS.map((tab) => (
        <button key={tab.view} type="button" role="tab" aria-selected={view === tab.view} onClick={() => onView(tab.view)}>
          {tab.label}
        </button>
      ))}
    </div>
  );
}
