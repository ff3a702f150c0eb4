// The middle and right panes for one conversation: its header and actions
// (its agent, where it was forked from, what it cost), the chat (thread, live
// runs, the answer form of a WAITING thread, composer), and the inspector
// (runs and checkpoints, forks). Every action's refusal is shown as the API
// words it.
import { useMemo, useState } from "preact/hooks";
import type { Api } from "../api/client.ts";
import { CANCEL_RUN, DELETE_CONVERSATION, FORK_CONVERSATION, RENAME_CONVERSATION, RESUME_RUN, START_RUN } from "../api/documents.ts";
import type { ConversationRow, Multitask, ToolCall } from "../api/types.ts";
import { checkpointViews, runViews, earlierMessages, pendingInterrupts, type RunView, type StartedRun } from "../state/conversation-view.ts";
import { callApprovals } from "../state/interrupts.ts";
import { AgentPicker, AgentTag } from "./AgentPicker.tsx";
import { Duration, Notices, StatusBadge } from "./bits.tsx";
import { formatDateTime, formatUsage, plural, shortId } from "./format.ts";
import { useAgents, useConversation, type Notice } from "./hooks.ts";
import { CheckpointsPanel, RunsPanel } from "./Inspector.tsx";
import { GraphView, graphFocus } from "./GraphView.tsx";
import type { StateTools } from "./StateViewer.tsx";
import { AnswerPanel, type Response } from "./Interrupts.tsx";
import { OwnerTag } from "./Owner.tsx";
import { conversationHref } from "./routes.ts";
import { Thread, type ThreadContext } from "./Thread.tsx";
import { isActive } from "../state/run-live.ts";

/** Opens a conversation, handing it the run started for it, if any (a fork with a message). */
export type OpenConversation = (conversationId: string, run: StartedRun | null) => void;

const DEFAULT_AGENT = "default";

export function NewConversationPane({ api, connected, onStarted }: { api: Api; connected: boolean; onStarted: OpenConversation }) {
  const [notices, setNotices] = useState<Notice[]>([]);
  const { agents, error } = useAgents(api);
  const [picked, setPicked] = useState<string | null>(null);
  // The server's default until one is picked (startRun without an agent runs it too).
  const agent = picked ?? agents?.find((a) => a.name === DEFAULT_AGENT)?.name ?? agents?.[0]?.name ?? null;
  const send = async (message: string) => {
    const outcome = await api.mutate(START_RUN, { message, agent }, "startRun");
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
        {error && (
          <p role="alert" class="notice">
            {error}
          </p>
        )}
        <div class="thread new-thread" role="log" aria-label="Messages">
          {agents && agent && <AgentPicker agents={agents} selected={agent} onSelect={setPicked} />}
          {!agents && !error && <p class="hint">Reading the agents…</p>}
        </div>
        <Composer disabled={!connected || !agent} blockedBy={null} waiting={false} onSend={send} />
      </main>
      <aside class="inspector" aria-label="Runs and checkpoints" />
    </>
  );
}

export function ConversationPane(props: {
  api: Api;
  id: string;
  row: ConversationRow | undefined;
  /** An admin's view: every conversation's owner is shown. */
  showOwner: boolean;
  deleted: boolean;
  reconnects: number;
  connected: boolean;
  handoff: StartedRun | null;
  onOpen: OpenConversation;
}) {
  const { api, id, connected } = props;
  const conversation = useConversation(api, id, props.row, props.reconnects, props.handoff);
  const { details, live, started, report, track } = conversation;
  const runs = useMemo(() => runViews(details, live, started), [details, live, started]);
  const checkpoints = useMemo(() => checkpointViews(details, runs), [details, runs]);
  const pending = useMemo(() => pendingInterrupts(details, runs), [details, runs]);
  const tools = useMemo<StateTools>(
    () => ({
      api,
      conversationId: id,
      agentName: details?.agentName ?? null,
      agentKind: details?.agent?.kind ?? null,
      checkpoints,
      onRun: conversation.track,
      onOpen: props.onOpen,
      notify: conversation.notify,
    }),
    [api, id, details, checkpoints, conversation.track, props.onOpen, conversation.notify],
  );
  const context = useMemo<ThreadContext>(() => {
    const numbers = new Map(runs.map((r) => [r.id, r.number]));
    const calls = new Map<string, ToolCall>();
    for (const message of details?.messages ?? []) for (const call of message.toolCalls) calls.set(call.id, call);
    return {
      approvals: callApprovals(
        runs.flatMap((r) => r.interrupts),
        new Set(pending.map((i) => i.id)),
      ),
      calls,
      runLabel: (runId) => (numbers.has(runId) ? `run #${numbers.get(runId)}` : `run ${shortId(runId)}`),
      edits: tools,
    };
  }, [runs, details, pending, tools]);
  const active = runs.find((r) => isActive(r.status)) ?? null;
  const focus = useMemo(() => graphFocus(runs, details?.next ?? []), [runs, details]);
  const title = details?.title ?? props.row?.title ?? "…";
  // With every run listed, a fork's messages before its first run are the ones it copied.
  const copied = details?.forkedFrom != null && details.runs.edges.length === details.runs.totalCount;

  if (props.deleted || conversation.missing) {
    return (
      <main class="chat empty" aria-label="Conversation">
        <p role="status">This conversation no longer exists: it was deleted.</p>
      </main>
    );
  }

  const send = async (message: string, multitask?: Multitask) => {
    const outcome = await api.mutate(START_RUN, { conversationId: id, message, multitask }, "startRun");
    if (report("Could not start the run", outcome)) track(outcome.value.run);
    return outcome.ok;
  };
  const resume = async () => {
    const outcome = await api.mutate(RESUME_RUN, { conversationId: id }, "resumeRun");
    if (report("Could not resume", outcome)) track(outcome.value.run);
  };
  const cancel = async (runId: string) => {
    report("Could not cancel the run", await api.mutate(CANCEL_RUN, { runId }, "cancelRun"));
  };
  const answer = async (responses: Response[]) => {
    const outcome = await api.mutate(RESUME_RUN, { conversationId: id, responses }, "resumeRun");
    if (report("Could not send the answers", outcome)) track(outcome.value.run);
    // Refused: what the thread waits for may have changed meanwhile (INTERRUPT_MISMATCH); the form shows it as it is now.
    else conversation.refetch();
    return outcome.ok;
  };
  const fork = async (checkpointId: string, message: string | null) => {
    const outcome = await api.mutate(FORK_CONVERSATION, { checkpointId, message }, "forkConversation");
    if (report("Could not fork", outcome)) props.onOpen(outcome.value.conversation.id, outcome.value.run);
    return outcome.ok;
  };

  return (
    <>
      <main class="chat" aria-labelledby="conversation-title">
        <ConversationHeader api={api} id={id} title={title} details={details} showOwner={props.showOwner} onRenamed={conversation.refetch} report={report} />
        <Notices notices={conversation.notices} onDismiss={conversation.dismiss} />
        <PendingWork
          active={active}
          resumable={details?.resumable ?? false}
          next={details?.next ?? []}
          latest={runs.at(-1) ?? null}
          onCancel={cancel}
          onResume={resume}
        />
        <Thread
          earlier={earlierMessages(details, runs)}
          earlierLabel={copied ? "Copied from the source conversation" : undefined}
          runs={runs}
          context={context}
        />
        {pending.length > 0 && (
          <AnswerPanel key={pending.map((i) => i.id).join(" ")} pending={pending} runLabel={context.runLabel} disabled={!connected} onSend={answer} />
        )}
        <Composer disabled={!connected} blockedBy={active} waiting={pending.length > 0} onSend={send} />
      </main>
      <aside class="inspector" aria-label="Runs and checkpoints">
        <GraphView api={api} agentName={details?.agentName ?? null} focus={focus} />
        <RunsPanel runs={runs} total={Math.max(details?.runs.totalCount ?? 0, runs.length)} onCancel={cancel} runLabel={context.runLabel} />
        <CheckpointsPanel checkpoints={checkpoints} hasEarlier={details?.checkpoints.pageInfo.hasPreviousPage ?? false} onFork={fork} tools={tools} />
      </aside>
    </>
  );
}

function ConversationHeader(props: {
  api: Api;
  id: string;
  title: string;
  details: ReturnType<typeof useConversation>["details"];
  showOwner: boolean;
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
          <AgentTag name={details.agentName} agent={details.agent} /> · <span title={details.id}>id {shortId(details.id)}</span> ·{" "}
          {props.showOwner && (
            <>
              <OwnerTag owner={details.owner} /> ·{" "}
            </>
          )}
          {details.messageCount === 0 && details.activeRun ? "first run running" : plural(details.messageCount, "message")} · started{" "}
          {formatDateTime(details.createdAt)}
        </p>
      )}
      {details?.forkedFrom && (
        <p class="fork-origin" role="note" aria-label="Forked from">
          {details.forkedFrom.conversation ? (
            <>
              Forked from <a href={conversationHref(details.forkedFrom.conversation.id)}>{details.forkedFrom.conversation.title}</a>
            </>
          ) : (
            <>Forked from a conversation that no longer exists</>
          )}
          {details.forkedFrom.checkpoint ? (
            <>
              {" "}
              at step {details.forkedFrom.checkpoint.step} <span class="hint">(checkpoint {shortId(details.forkedFrom.checkpoint.id)})</span>
            </>
          ) : null}
          .
        </p>
      )}
      {details && details.usage.modelCalls + details.usage.inputTokens + details.usage.outputTokens > 0 && (
        <p class="hint usage" role="note" aria-label="Conversation usage">
          All runs: {formatUsage(details.usage)}
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
          <ExportButtons api={api} id={id} title={props.title} report={report} />
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
            {/* A textarea, so a long title wraps instead of being cut; Enter saves, as in an input. */}
            <textarea
              rows={1}
              value={draft}
              ref={fitTitle}
              onInput={(e) => {
                setDraft(e.currentTarget.value);
                fitTitle(e.currentTarget);
              }}
              onKeyDown={(e) => {
                if (e.key === "Enter" && !e.isComposing) {
                  e.preventDefault();
                  e.currentTarget.form?.requestSubmit();
                }
              }}
              disabled={busy}
              autoFocus
            />
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

/** Grows the title's textarea to the lines its text takes, so none of it is hidden. */
function fitTitle(element: HTMLTextAreaElement | null): void {
  if (!element) return;
  element.style.height = "auto";
  element.style.height = `${element.scrollHeight + 2}px`;
}

const EXPORTS = [
  { format: "jsonl", label: "Export JSONL", extension: "jsonl" },
  { format: "markdown", label: "Export Markdown", extension: "md" },
] as const;

/**
 * The API's export (GET /api/conversations/:id/export), saved as a file. It is
 * fetched with the credential and handed over as a blob, since a plain link
 * could not carry the Authorization header.
 */
function ExportButtons({ api, id, title, report }: { api: Api; id: string; title: string; report: ReturnType<typeof useConversation>["report"] }) {
  const save = async (format: string, extension: string) => {
    let file: { text: string; contentType: string };
    try {
      file = await api.fetchText(`/api/conversations/${id}/export?format=${format}`);
    } catch (error) {
      report("Could not export", { ok: false, refusal: { __typename: "RequestError", code: "EXPORT_FAILED", message: (error as Error).message } });
      return;
    }
    const url = URL.createObjectURL(new Blob([file.text], { type: file.contentType }));
    const link = document.createElement("a");
    link.href = url;
    link.download = `${
      title
        .replace(/[^\w.-]+/g, "-")
        .replace(/^-+|-+$/g, "")
        .slice(0, 60) || "conversation"
    }-${shortId(id)}.${extension}`;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  };
  return (
    <>
      {EXPORTS.map((e) => (
        <button key={e.format} type="button" onClick={() => void save(e.format, e.extension)}>
          {e.label}
        </button>
      ))}
    </>
  );
}

/**
 * What the thread is waiting for: the running run (cancel), or a pending step
 * left by a run that did not finish (resume). Questions a WAITING run asked
 * have their own form (AnswerPanel), above the composer.
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
          Run #{active.number} is {active.status === "QUEUED" ? "waiting its turn" : "running"} · <Duration startedAt={active.startedAt} finishedAt={null} />
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

/** startRun's multitask choices, as the composer offers them while a run is active (REJECT would only refuse). */
const MULTITASK_CHOICES: [Multitask, string][] = [
  ["ENQUEUE", "Queue after it"],
  ["INTERRUPT", "Stop it, send now"],
  ["ROLLBACK", "Undo it, send now"],
];

function Composer({
  disabled,
  blockedBy,
  waiting,
  onSend,
}: {
  disabled: boolean;
  blockedBy: RunView | null;
  waiting: boolean;
  onSend: (message: string, multitask?: Multitask) => Promise<boolean>;
}) {
  const [text, setText] = useState("");
  const [sending, setSending] = useState(false);
  // What a message sent while a run is active does (startRun's multitask); queueing it is the gentlest.
  const [multitask, setMultitask] = useState<Multitask>("ENQUEUE");
  const blocked = blockedBy !== null;
  const submit = async () => {
    if (!text.trim() || sending) return;
    setSending(true);
    const sent = await onSend(text, blocked ? multitask : undefined);
    setSending(false);
    // A refused message stays in the box, to be sent again.
    if (sent) setText("");
  };
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
            void submit();
          }
        }}
      />
      <div class="composer-foot">
        <span class="hint">
          {blocked
            ? `Run #${blockedBy.number} is ${blockedBy.status === "QUEUED" ? "waiting its turn" : "running"}.`
            : waiting
              ? "A new message goes ahead without answering the question above."
              : ""}
        </span>
        {blocked && (
          <select aria-label="While a run is active" value={multitask} onChange={(e) => setMultitask(e.currentTarget.value as Multitask)}>
            {MULTITASK_CHOICES.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        )}
        <button type="submit" disabled={disabled || sending || !text.trim()}>
          Send
        </button>
      </div>
    </form>
  );
}
