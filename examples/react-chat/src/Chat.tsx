// One conversation: its thread (a run's answer streams into it), the
// composer with Send and Stop, the run's status with Resume, the questions a
// waiting run asks (a tool to approve, a tool call in doubt), editing a
// message to re-run from it, and the history to fork from.
import { memo, useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, type FormEvent, type RefObject } from "react";
import {
  useConversation,
  useRunledgerClient,
  type ChatMessage,
  type ConversationState,
  type ConversationView,
  type PendingInterrupt,
  type RunState,
} from "@runledger/react";
import { checkpointAdding, listAgents, type Agent } from "./api.ts";
import { History } from "./History.tsx";

export interface ChatProps {
  conversationId: string | null;
  initial: ConversationState | null;
  /** The view moved to a conversation of its own making: its first message created it, or a fork. */
  onOpened: (conversationId: string) => void;
}

export function Chat({ conversationId, initial, onOpened }: ChatProps) {
  const chat = useConversation(conversationId, { initial });
  const client = useRunledgerClient();
  const [historyOpen, setHistoryOpen] = useState(false);
  const [editing, setEditing] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const shown = chat.conversationId;

  useEffect(() => {
    if (shown && shown !== conversationId) onOpened(shown);
  }, [shown, conversationId, onOpened]);
  useEffect(() => {
    setEditing(null);
    setProblem(null);
  }, [shown]);

  // Rows are memoized on their message: these stay the same functions, so a streamed token renders one row.
  const { edit, resume, retry, discard } = chat;
  const rerun = useCallback(
    async (message: ChatMessage, text: string) => {
      if (!shown) return;
      setProblem(null);
      // Written at the checkpoint that added the message, replacing it as the graph's input: the thread goes back there, and resume() answers it again.
      const at = await checkpointAdding(client, shown, message.id);
      if (!at) return setProblem("The checkpoint that added this message is not listed any more.");
      const edited = await edit({ checkpointId: at, message: text });
      if (!edited.ok) return setProblem(`Could not edit: ${edited.error.message}`);
      if (edited.value.run.status !== "COMPLETED") return setProblem(`The edit failed: ${edited.value.run.errorMessage ?? edited.value.run.status}`);
      setEditing(null);
      const resumed = await resume();
      if (!resumed.ok) setProblem(`Edited, but could not run on: ${resumed.error.message}`);
    },
    [client, shown, edit, resume],
  );
  const actions = useMemo<RowActions>(() => ({ retry, discard, edit: setEditing, rerun }), [retry, discard, rerun]);

  const thread = useRef<HTMLOListElement>(null);
  useStickToBottom(thread, chat.messages);

  return (
    <section
      id="chat"
      className="chat"
      data-conversation={shown ?? ""}
      data-phase={chat.phase}
      data-run={chat.run?.id ?? ""}
      data-status={chat.run?.status ?? ""}
      data-seq={chat.run?.lastSeq ?? 0}
    >
      <header className="chat-head">
        <h2>{chat.title ?? (shown ? "…" : "New conversation")}</h2>
        {shown && (
          <button type="button" aria-expanded={historyOpen} onClick={() => setHistoryOpen((open) => !open)}>
            History
          </button>
        )}
      </header>
      {historyOpen && shown && <History conversationId={shown} runKey={`${chat.run?.id}:${chat.run?.status}`} fork={chat.fork} />}
      {chat.phase === "missing" && <p className="notice">There is no such conversation (or it is not yours).</p>}
      <ol className="thread" ref={thread}>
        {chat.messages.map((message) => (
          <Message key={message.id} message={message} editing={editing === message.id} actions={actions} />
        ))}
      </ol>
      {chat.interrupts.map((interrupt) => (
        <Interrupt key={interrupt.id} interrupt={interrupt} respond={chat.respond} />
      ))}
      <RunBar run={chat.run} resumable={chat.resumable} resume={resume} />
      {(problem ?? chat.error) && <p className="notice">{problem ?? chat.error?.message}</p>}
      <Composer chat={chat} />
    </section>
  );
}

interface RowActions {
  retry: ConversationView["retry"];
  discard: ConversationView["discard"];
  edit: (messageId: string | null) => void;
  rerun: (message: ChatMessage, text: string) => Promise<void>;
}

const WHO = { USER: "You", ASSISTANT: "Assistant", TOOL: "Tool" };

const Message = memo(function Message({ message, editing, actions }: { message: ChatMessage; editing: boolean; actions: RowActions }) {
  return (
    <li className={`message ${message.role.toLowerCase()} ${message.state}`} data-id={message.id} data-role={message.role} data-state={message.state}>
      <div className="who">{message.role === "TOOL" && message.name ? `${WHO.TOOL} · ${message.name}` : WHO[message.role]}</div>
      {editing ? <EditForm message={message} actions={actions} /> : message.content && <div className="content">{message.content}</div>}
      {message.toolCalls.map((call) => (
        <code key={call.id} className="call">
          {call.name}({JSON.stringify(call.args)})
        </code>
      ))}
      {message.state === "partial" && <div className="note">Stopped here.</div>}
      {message.incomplete && <div className="note">Part of this was missed; reading it back…</div>}
      {message.state === "unsent" && (
        <div className="note">
          Not sent: {message.error?.message}{" "}
          <button type="button" onClick={() => void actions.retry(message.id)}>
            Retry
          </button>
          <button type="button" onClick={() => actions.discard(message.id)}>
            Discard
          </button>
        </div>
      )}
      {message.role === "USER" && message.state === "stored" && !editing && (
        <button type="button" className="edit" onClick={() => actions.edit(message.id)}>
          Edit
        </button>
      )}
    </li>
  );
});

function EditForm({ message, actions }: { message: ChatMessage; actions: RowActions }) {
  const [text, setText] = useState(message.content);
  const [busy, setBusy] = useState(false);
  const save = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    await actions.rerun(message, text.trim());
    setBusy(false);
  };
  return (
    <form className="edit-form" onSubmit={save}>
      <textarea aria-label="Edited message" value={text} onChange={(event) => setText(event.target.value)} disabled={busy} autoFocus />
      <button type="submit" disabled={busy || !text.trim() || text.trim() === message.content}>
        Re-run
      </button>
      <button type="button" onClick={() => actions.edit(null)} disabled={busy}>
        Cancel
      </button>
    </form>
  );
}

function Interrupt({ interrupt, respond }: { interrupt: PendingInterrupt; respond: ConversationView["respond"] }) {
  const [busy, setBusy] = useState(false);
  const [text, setText] = useState("");
  const [problem, setProblem] = useState<string | null>(null);
  const answer = async (value: Parameters<ConversationView["respond"]>[0]) => {
    setBusy(true);
    setProblem(null);
    const done = await respond(value, { interruptId: interrupt.id });
    setBusy(false);
    if (!done.ok) setProblem(done.error.message);
  };
  let body;
  if (interrupt.kind === "tool_approval") {
    const calls = interrupt.value.toolCalls;
    body = (
      <>
        <p>The agent asks to run:</p>
        {calls.map((call) => (
          <code key={call.id} className="call">
            {call.name}({JSON.stringify(call.args)})
          </code>
        ))}
        <div className="actions">
          <button
            type="button"
            disabled={busy}
            onClick={() => void answer({ toolCalls: calls.map((call) => ({ id: call.id, decision: "approve" as const })) })}
          >
            Approve
          </button>
          <button
            type="button"
            disabled={busy}
            onClick={() => void answer({ toolCalls: calls.map((call) => ({ id: call.id, decision: "reject" as const, reason: "The user declined." })) })}
          >
            Deny
          </button>
        </div>
      </>
    );
  } else if (interrupt.kind === "tool_in_doubt") {
    const { tool, args, attempt } = interrupt.value;
    const told = text.trim() ? { result: text.trim() } : {};
    body = (
      <>
        <p>
          <code>
            {tool}({JSON.stringify(args)})
          </code>{" "}
          was cut off and may or may not have run (attempt {attempt}). Run it again, or tell the agent what happened.
        </p>
        <input aria-label="What happened" placeholder="What happened (for Skip or Fail)" value={text} onChange={(event) => setText(event.target.value)} />
        <div className="actions">
          <button type="button" disabled={busy} onClick={() => void answer({ decision: "retry" })}>
            Retry
          </button>
          <button type="button" disabled={busy} onClick={() => void answer({ decision: "skip", ...told })}>
            Skip
          </button>
          <button type="button" disabled={busy} onClick={() => void answer({ decision: "fail", ...told })}>
            Fail
          </button>
        </div>
      </>
    );
  } else {
    body = (
      <>
        <pre>{JSON.stringify(interrupt.value, null, 2)}</pre>
        <textarea aria-label="Answer (JSON)" value={text} onChange={(event) => setText(event.target.value)} />
        <div className="actions">
          <button
            type="button"
            disabled={busy}
            onClick={() => {
              try {
                void answer(JSON.parse(text));
              } catch {
                setProblem("The answer is not JSON.");
              }
            }}
          >
            Answer
          </button>
        </div>
      </>
    );
  }
  return (
    <div className="interrupt" data-kind={interrupt.kind}>
      {body}
      {problem && <p className="notice">{problem}</p>}
    </div>
  );
}

function describe(run: RunState): string {
  switch (run.status) {
    case "QUEUED":
      return `Queued${run.queuePosition ? ` (#${run.queuePosition})` : ""}${run.queueReason ? `: ${run.queueReason.toLowerCase().replace(/_/g, " ")}` : ""}`;
    case "RUNNING":
      return "Answering…";
    case "WAITING":
      return "Waiting for your answer";
    case "COMPLETED":
      return "Done";
    case "CANCELLED":
      return "Stopped";
    default:
      return `${run.status === "INTERRUPTED" ? "Interrupted" : "Failed"}${run.errorMessage ? `: ${run.errorMessage}` : ""}`;
  }
}

function RunBar({ run, resumable, resume }: { run: RunState | null; resumable: boolean; resume: ConversationView["resume"] }) {
  if (!run) return null;
  const missed = run.gaps.some((gap) => !gap.refilled);
  return (
    <div className={`run ${run.status.toLowerCase()}`} data-status={run.status}>
      <span>
        {describe(run)}
        {missed ? " · reading back missed events…" : ""}
      </span>
      {resumable && (
        <button type="button" onClick={() => void resume()}>
          Resume
        </button>
      )}
    </div>
  );
}

function Composer({ chat }: { chat: ConversationView }) {
  const client = useRunledgerClient();
  const [draft, setDraft] = useState("");
  const [agents, setAgents] = useState<Agent[]>([]);
  const [agent, setAgent] = useState("");
  const isNew = chat.conversationId === null;
  useEffect(() => {
    if (isNew && agents.length === 0) listAgents(client).then(setAgents, () => {});
  }, [client, isNew, agents.length]);
  const send = (event?: FormEvent) => {
    event?.preventDefault();
    const text = draft.trim();
    if (!text) return;
    setDraft("");
    // Shown at once; if it is refused or never answered it stays in the thread as unsent, with Retry.
    void chat.submit(text, isNew && agent ? { agent } : {});
  };
  return (
    <form className="composer" onSubmit={send}>
      {isNew && agents.length > 1 && (
        <select aria-label="Agent" value={agent} onChange={(event) => setAgent(event.target.value)}>
          <option value="">default agent</option>
          {agents.map((a) => (
            <option key={a.name} value={a.name} title={a.description}>
              {a.name}
            </option>
          ))}
        </select>
      )}
      <textarea
        aria-label="Message"
        placeholder="Message"
        rows={1}
        value={draft}
        onChange={(event) => setDraft(event.target.value)}
        onKeyDown={(event) => {
          if (event.key !== "Enter" || event.shiftKey) return;
          event.preventDefault();
          send();
        }}
      />
      {chat.busy ? (
        <button type="button" className="stop" onClick={() => void chat.stop()}>
          Stop
        </button>
      ) : (
        <button type="submit" className="send" disabled={!draft.trim()}>
          Send
        </button>
      )}
    </form>
  );
}

/** Keeps the thread scrolled to its end as it grows, unless the reader scrolled up. */
function useStickToBottom(ref: RefObject<HTMLElement | null>, content: unknown) {
  const stuck = useRef(true);
  useEffect(() => {
    const element = ref.current;
    if (!element) return;
    const onScroll = () => (stuck.current = element.scrollHeight - element.scrollTop - element.clientHeight < 48);
    element.addEventListener("scroll", onScroll);
    return () => element.removeEventListener("scroll", onScroll);
  }, [ref]);
  useLayoutEffect(() => {
    if (stuck.current && ref.current) ref.current.scrollTop = ref.current.scrollHeight;
  }, [ref, content]);
}
