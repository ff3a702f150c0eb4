// The middle and right panes for one conversation: its header and actions,
// the chat (thread, live runs, composer), and the inspector (runs and
// checkpoints). Every action's refusal is shown as the API words it.
import { useMemo, useState } from "preact/hooks";
import type { Api } from "../api/client.ts";
import { CANCEL_RUN, DELETE_CONVERSATION, RENAME_CONVERSATION, RESUME_RUN, START_RUN } from "../api/documents.ts";
import type { ConversationRow, RunKind, RunStatus } from "../api/types.ts";
import { checkpointViews, runViews, earlierMessages, type RunView, type StartedRun } from "../state/conversation-view.ts";
import { Duration, Notices, StatusBadge } from "./bits.tsx";
import { formatDateTime, shortId } from "./format.ts";
import { useConversation, type Notice } from "./hooks.ts";
import { CheckpointsPanel, RunsPanel } from "./Inspector.tsx";
import { Thread } from "./Thread.tsx";

interface RunStarted {
  run: { id: string; status: RunStatus; kind: RunKind; input: string | null; startedAt: string };
}

export function NewConversationPane({ api, connected, onStarted }: { api: Api; connected: boolean; onStarted: (conversationId: string, run: StartedRun) => void }) {
  const [notices, setNotices] = useState<Notice[]>([]);
  const send = async (message: string) => {
    const outcome = await api.mutate<RunStarted & { conversation: { id: string } }>(START_RUN, { message }, "startRun");
    if (outcome.ok) {
      onStarted(outcome.value.conversation.id, outcome.value.run);
      return true;
    }
    setNotices((list) => [...list, { id: Date.now(), text: `Could not start the run: ${outcome.refusal.code} — ${outcome.refusal.message}` }]);
    return false;
  };
  return (
    <>
      <main class="chat" aria-label="Conversation">
        <header class="conversation-head">
          <h2>New conversation</h2>
          <p class="hint">The first message starts it; its first line becomes the title.</p>
        </header>
        <Notices notices={notices} onDismiss={(id) => setNotices((list) => list.filter((n) => n.id !== id))} />
        <div class="thread" role="log" aria-label="Messages" />
        <Composer disabled={!connected} blockedBy={null} onSend={send} />
      </main>
      <aside class="inspector" aria-label="Runs and checkpoints" />
    </>
  );
}

export function ConversationPane(props: {
  api: Api;
  id: string;
  row: ConversationRow | undefined;
  deleted: boolean;
  reconnects: number;
  connected: boolean;
  handoff: StartedRun | null;
}) {
  const { api, id, connected } = props;
  const conversation = useConversation(api, id, props.row, props.reconnects, props.handoff);
  const { details, live, started, report, track } = conversation;
  const runs = useMemo(() => runViews(details, live, started), [details, live, started]);
  const checkpoints = useMemo(() => checkpointViews(details, runs), [details, runs]);
  const active = runs.find((r) => r.status === "RUNNING") ?? null;
  const title = details?.title ?? props.row?.title ?? "…";

  if (props.deleted || conversation.missing) {
    return (
      <main class="chat empty" aria-label="Conversation">
        <p role="status">This conversation no longer exists: it was deleted.</p>
      </main>
    );
  }

  const send = async (message: string) => {
    const outcome = await api.mutate<RunStarted>(START_RUN, { conversationId: id, message }, "startRun");
    if (report("Could not start the run", outcome)) track(outcome.value.run);
    return outcome.ok;
  };
  const resume = async () => {
    const outcome = await api.mutate<RunStarted>(RESUME_RUN, { conversationId: id }, "resumeRun");
    if (report("Could not resume", outcome)) track(outcome.value.run);
  };
  const cancel = async (runId: string) => {
    report("Could not cancel the run", await api.mutate(CANCEL_RUN, { runId }, "cancelRun"));
  };

  return (
    <>
      <main class="chat" aria-labelledby="conversation-title">
        <ConversationHeader
          api={api}
          id={id}
          title={title}
          details={details}
          onRenamed={conversation.refetch}
          report={report}
        />
        <Notices notices={conversation.notices} onDismiss={conversation.dismiss} />
        <PendingWork active={active} resumable={details?.resumable ?? false} next={details?.next ?? []} latest={runs.at(-1) ?? null} onCancel={cancel} onResume={resume} />
        <Thread earlier={earlierMessages(details, runs)} runs={runs} />
        <Composer disabled={!connected} blockedBy={active} onSend={send} />
      </main>
      <aside class="inspector" aria-label="Runs and checkpoints">
        <RunsPanel runs={runs} total={Math.max(details?.runs.totalCount ?? 0, runs.length)} onCancel={cancel} />
        <CheckpointsPanel checkpoints={checkpoints} hasEarlier={details?.checkpoints.pageInfo.hasPreviousPage ?? false} />
      </aside>
    </>
  );
}

function ConversationHeader(props: {
  api: Api;
  id: string;
  title: string;
  details: ReturnType<typeof useConversation>["details"];
  onRenamed: () => void;
  report: ReturnType<typeof useConversation>["report"];
}) {
  const { api, id, details, report } = props;
  const [mode, setMode] = useState<"view" | "rename" | "delete">("view");
  const [draft, setDraft] = useState(props.title);
  const [busy, setBusy] = useState(false);

  const rename = async () => {
    setBusy(true);
    const outcome = await api.mutate(RENAME_CONVERSATION, { conversationId: id, title: draft }, "renameConversation");
    setBusy(false);
    if (report("Could not rename", outcome)) {
      setMode("view");
      props.onRenamed();
    }
  };
  const remove = async () => {
    setBusy(true);
    const outcome = await api.mutate(DELETE_CONVERSATION, { conversationId: id }, "deleteConversation");
    setBusy(false);
    // On success the list's deletion notice replaces this pane.
    if (!report("Could not delete", outcome)) setMode("view");
  };

  return (
    <header class="conversation-head">
      <h2 id="conversation-title">{props.title}</h2>
      {details && (
        <p class="hint">
          <span title={details.id}>id {shortId(details.id)}</span> · {details.messageCount} {details.messageCount === 1 ? "message" : "messages"} · started{" "}
          {formatDateTime(details.createdAt)}
        </p>
      )}
      {mode === "view" && (
        <div class="actions">
          <button
            type="button"
            onClick={() => {
              setDraft(props.title);
              setMode("rename");
            }}
          >
            Rename
          </button>
          <button type="button" class="danger" onClick={() => setMode("delete")}>
            Delete
          </button>
          {/* "Fork from a checkpoint" joins these once the API has forkConversation. */}
        </div>
      )}
      {mode === "rename" && (
        <form
          aria-label="Rename conversation"
          class="inline-form"
          onSubmit={(event) => {
            event.preventDefault();
            void rename();
          }}
        >
          <label>
            Title
            <input value={draft} onInput={(e) => setDraft(e.currentTarget.value)} disabled={busy} autoFocus />
          </label>
          <button type="submit" disabled={busy}>
            Save
          </button>
          <button type="button" onClick={() => setMode("view")}>
            Cancel
          </button>
        </form>
      )}
      {mode === "delete" && (
        <div role="group" aria-label="Confirm deletion" class="inline-form">
          <span>Delete this conversation with its runs and checkpoints?</span>
          <button type="button" class="danger" onClick={() => void remove()} disabled={busy}>
            Delete for good
          </button>
          <button type="button" onClick={() => setMode("view")}>
            Keep it
          </button>
        </div>
      )}
    </header>
  );
}

/**
 * What the thread is waiting for: the running run (cancel), or a pending step
 * left by a run that did not finish (resume). Human approvals of tool calls
 * (runs ending WAITING with pending interrupts, answered through resumeRun's
 * responses) belong here once the API has them.
 */
function PendingWork(props: {
  active: RunView | null;
  resumable: boolean;
  next: string[];
  latest: RunView | null;
  onCancel: (runId: string) => void;
  onResume: () => void;
}) {
  const { active, latest } = props;
  if (active) {
    return (
      <div class="banner banner-running">
        <span>
          Run #{active.number} is running · <Duration startedAt={active.startedAt} finishedAt={null} />
        </span>
        <button type="button" onClick={() => props.onCancel(active.id)}>
          Cancel run
        </button>
      </div>
    );
  }
  if (!props.resumable) return null;
  return (
    <div class="banner banner-pending">
      <span>
        A step is still pending: <code>{props.next.join(", ")}</code>
        {latest && latest.status !== "COMPLETED" ? (
          <>
            {" "}
            (run #{latest.number} ended <StatusBadge status={latest.status} code={latest.errorCode} />)
          </>
        ) : null}
        . Resuming runs it again; a new message replaces it.
      </span>
      <button type="button" onClick={props.onResume}>
        Resume
      </button>
    </div>
  );
}

function Composer({ disabled, blockedBy, onSend }: { disabled: boolean; blockedBy: RunView | null; onSend: (message: string) => Promise<boolean> }) {
  const [text, setText] = useState("");
  const [sending, setSending] = useState(false);
  const submit = async () => {
    if (!text.trim() || sending) return;
    setSending(true);
    const sent = await onSend(text);
    setSending(false);
    // A refused message stays in the box, to be sent again.
    if (sent) setText("");
  };
  const blocked = blockedBy !== null;
  return (
    <form
      aria-label="Send a message"
      class="composer"
      onSubmit={(event) => {
        event.preventDefault();
        void submit();
      }}
    >
      <textarea
        aria-label="Message"
        placeholder="Message the agent. Enter sends, Shift+Enter starts a new line."
        rows={3}
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
            e.preventDefault();
            if (!blocked) void submit();
          }
        }}
      />
      {/* An agent picker goes here once the API offers several agents (startRun(input: {agent})). */}
      <div class="composer-foot">
        <span class="hint">{blocked ? `Run #${blockedBy.number} is running: cancel it or wait for it to end.` : ""}</span>
        <button type="submit" disabled={disabled || blocked || sending || !text.trim()}>
          Send
        </button>
      </div>
    </form>
  );
}
