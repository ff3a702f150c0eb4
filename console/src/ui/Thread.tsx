// The chat: the thread's messages grouped by the run that added them, so an
// attempt that failed, was cancelled or was interrupted shows where it
// happened, with its error, instead of disappearing between two answers.
// A running run shows what it streams: tokens (with their node when it is not
// the agent's), tool calls and their results, and a custom graph's events. A
// run that ended WAITING shows what it asked and, later, how it was answered.
import { createContext, Fragment } from "preact";
import { useContext, useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import type { Interrupt, Message, ToolCall } from "../api/types.ts";
import type { RunView } from "../state/conversation-view.ts";
import type { CallApproval } from "../state/interrupts.ts";
import { AGENT_NODE, isActive, type LiveItem } from "../state/run-live.ts";
import { recordedRun } from "../state/recorded-run.ts";
import { Duration, RunStatusBadge } from "./bits.tsx";
import { compactJson, formatJson } from "./format.ts";
import { describeAnswer, describeQuestion, describeOutcome, type RunLabel } from "./Interrupts.tsx";
import { EditInThread } from "./EditState.tsx";
import type { StateTools } from "./StateViewer.tsx";

/** What the thread needs besides its runs: where each tool call stands on approval, and each call as the thread holds it now. */
export interface ThreadContext {
  approvals: ReadonlyMap<string, CallApproval>;
  /** The calls of the thread's latest messages, by id: an edited call's arguments as run, for results shown apart from their call. */
  calls: ReadonlyMap<string, ToolCall>;
  runLabel: RunLabel;
  /** What editing a user message and re-running from it needs; null where the thread offers no edits. */
  edits: StateTools | null;
}

export function Thread({
  earlier,
  earlierLabel = "Earlier messages",
  runs,
  context,
}: {
  earlier: Message[];
  earlierLabel?: string;
  runs: RunView[];
  context: ThreadContext;
}) {
  const box = useRef<HTMLDivElement>(null);
  const list = useRef<HTMLOListElement>(null);
  // Follow the newest output as it streams, unless the reader scrolled up on
  // purpose (wheel, touch, key) or is editing a message. Only those detach it:
  // a scroll event cannot tell the reader's scrolling from content growing
  // under it.
  const following = useRef(true);
  const [detached, setDetached] = useState(false);
  const toBottom = () => {
    const element = box.current;
    if (element && following.current) element.scrollTop = element.scrollHeight;
  };
  const detach = () => {
    const element = box.current;
    if (!element || element.scrollHeight <= element.clientHeight || !following.current) return;
    following.current = false;
    setDetached(true);
  };
  const attach = () => {
    following.current = true;
    setDetached(false);
    toBottom();
  };
  useLayoutEffect(toBottom);
  useEffect(() => {
    // Content that grows (streamed tokens, a snapshot read again) or a box that shrinks keeps the bottom in view.
    const observer = new ResizeObserver(toBottom);
    if (box.current) observer.observe(box.current);
    if (list.current) observer.observe(list.current);
    return () => observer.disconnect();
  }, []);
  const touchY = useRef<number | null>(null);

  return (
    <div
      class="thread"
      role="log"
      aria-label="Messages"
      tabIndex={0}
      ref={box}
      onWheel={(event) => {
        if (event.deltaY < 0) detach();
      }}
      onTouchStart={(event) => {
        touchY.current = event.touches[0]?.clientY ?? null;
      }}
      onTouchMove={(event) => {
        const y = event.touches[0]?.clientY;
        // A finger moving down scrolls the thread up.
        if (touchY.current !== null && y !== undefined && y > touchY.current + 4) detach();
      }}
      onKeyDown={(event) => {
        if (UP_KEYS.has(event.key) || (event.key === " " && event.shiftKey)) detach();
      }}
      onFocusIn={(event) => {
        // Editing a message in the thread: what is being edited stays in view while answers stream below.
        if ((event.target as Element).closest("form")) detach();
      }}
      onScroll={(event) => {
        // Back at the bottom by the reader's own scrolling: follow again.
        const element = event.currentTarget;
        if (!following.current && element.scrollHeight - element.scrollTop - element.clientHeight < 2) {
          following.current = true;
          setDetached(false);
        }
      }}
    >
      <FollowLatest.Provider value={attach}>
        <ol ref={list}>
          {earlier.length > 0 && (
            <>
              <li class="run-divider">
                <span>{earlierLabel}</span>
              </li>
              <Messages messages={earlier} context={context} nodes={NO_NODES} />
            </>
          )}
          {runs.map((run) => (
            <RunTurn key={run.id} run={run} context={context} />
          ))}
        </ol>
      </FollowLatest.Provider>
      {detached && (
        <button type="button" class="jump-latest" onClick={attach}>
          Jump to latest ↓
        </button>
      )}
    </div>
  );
}

const UP_KEYS = new Set(["ArrowUp", "PageUp", "Home"]);

/** Follows the newest output again: after an edit is saved, its new answer comes at the bottom. */
const FollowLatest = createContext<() => void>(() => {});

const NO_NODES: ReadonlyMap<string, string> = new Map();

function RunTurn({ run, context }: { run: RunView; context: ThreadContext }) {
  const ended = !isActive(run.status);
  return (
    <>
      <li class="run-divider">
        <span>
          Run #{run.number} · {run.kind.toLowerCase()}
        </span>{" "}
        <RunStatusBadge run={run} /> <Duration class="hint" startedAt={run.startedAt} finishedAt={run.finishedAt} />
      </li>
      {/* A queued run has nothing recorded yet: shown as a live one that has not begun (its message, and that it waits). */}
      {run.live || run.status === "QUEUED" ? <LiveTurn run={run} context={context} /> : <RecordedTurn run={run} context={context} />}
      {ended && run.status === "WAITING" && <WaitingOutcome run={run} runLabel={context.runLabel} />}
      {ended && run.status !== "COMPLETED" && run.status !== "WAITING" && <Outcome run={run} />}
    </>
  );
}

/**
 * A run as the snapshot records it, with the custom events and message nodes
 * it stored (or this page saw) where they streamed: the same after a reload.
 */
function RecordedTurn({ run, context }: { run: RunView; context: ThreadContext }) {
  const { entries, nodes } = recordedRun(run);
  return (
    <>
      {entries.map((entry) =>
        entry.kind === "event" ? (
          <LiveEntry key={entry.item.key} item={entry.item} streaming={false} context={context} />
        ) : (
          <Messages key={entry.key} messages={entry.messages} context={context} nodes={nodes} runId={run.id} />
        ),
      )}
    </>
  );
}

function LiveTurn({ run, context }: { run: RunView; context: ThreadContext }) {
  const items = run.live?.items ?? [];
  const running = isActive(run.status);
  return (
    <>
      {run.kind === "START" && run.input !== null && <Bubble role="USER" content={run.input} />}
      {items.map((item) => (
        <LiveEntry key={item.key} item={item} streaming={running && item === items.at(-1)} running={running} context={context} />
      ))}
      {running && items.length === 0 && (
        <li class="message message-assistant waiting">
          <span class="hint">{run.status === "QUEUED" ? "Waiting its turn…" : "Waiting for the model…"}</span>
        </li>
      )}
    </>
  );
}

function LiveEntry({ item, streaming, running = false, context }: { item: LiveItem; streaming: boolean; running?: boolean; context: ThreadContext }) {
  switch (item.kind) {
    case "text":
      return <Bubble role="ASSISTANT" content={item.text} streaming={streaming} node={item.node} />;
    case "tool": {
      // A result whose call this run did not stream (an approved call runs in the resume): the call as the thread holds it.
      const call = item.args === null ? context.calls.get(item.toolCallId) : undefined;
      const approval = context.approvals.get(item.toolCallId);
      return (
        <li class="message message-tool">
          <ToolCard
            name={call?.name ?? item.name}
            args={call ? call.args : item.args}
            result={item.result}
            state={item.result ? "done" : running ? "running" : approval ? "approval" : "none"}
            approval={approval}
            runLabel={context.runLabel}
          />
        </li>
      );
    }
    case "custom":
      return (
        <li class="message custom-event">
          <div role="group" aria-label={`Event ${item.name}`} class="event-card" title={formatJson(item.data)}>
            <span class="tool-label">event</span> <code class="tool-name">{item.name}</code> <code class="tool-args">{compactJson(item.data)}</code>
          </div>
        </li>
      );
    case "gap":
      return (
        <li class="message gap">
          <span class="hint">
            Events {item.fromSeq}–{item.toSeq} are no longer kept by the server; the rest follows.
          </span>
        </li>
      );
  }
}

const ROLE_LABELS: Record<string, string> = { USER: "You", ASSISTANT: "Assistant", TOOL: "Tool result" };

/** A recorded user message that may be edited, with the run that shows it. */
interface BubbleEdit {
  tools: StateTools;
  message: Message;
  runId?: string;
}

function Bubble({ role, content, streaming = false, node, edit }: { role: string; content: string; streaming?: boolean; node?: string; edit?: BubbleEdit }) {
  const named = node && node !== AGENT_NODE ? node : null;
  const follow = useContext(FollowLatest);
  const article = (
    <article aria-label={ROLE_LABELS[role] ?? role} aria-busy={streaming || undefined}>
      {named && (
        <span class="node-label" title="the graph node that produced it">
          node <code>{named}</code>
        </span>
      )}
      <p class="message-text">{content}</p>
    </article>
  );
  return (
    <li class={`message message-${role.toLowerCase()}${streaming ? " streaming" : ""}${edit ? " editable" : ""}`}>
      {edit ? (
        <EditInThread tools={edit.tools} message={edit.message} runId={edit.runId} onSaved={follow}>
          {article}
        </EditInThread>
      ) : (
        article
      )}
    </li>
  );
}

type CardState = "running" | "done" | "approval" | "none";

function approvalWords(approval: CallApproval, runLabel: RunLabel): string {
  switch (approval.state) {
    case "waiting":
      return "waiting for approval";
    case "superseded":
      return "not run: a later message went ahead without an answer";
    case "decided":
      return `${describeOutcome("", approval.outcome).trim()}${approval.byRun ? ` (${runLabel(approval.byRun)})` : ""}`;
  }
}

function ToolCard(props: {
  name: string;
  args: unknown;
  result: { content: string; isError: boolean } | null;
  state: CardState;
  approval?: CallApproval;
  runLabel: RunLabel;
}) {
  const { name, args, result, state, approval } = props;
  return (
    <div role="group" aria-label={`Tool call ${name}`} class={`tool-card${approval?.state === "waiting" && !result ? " tool-waiting" : ""}`}>
      <div class="tool-call">
        <span class="tool-label">tool call</span> <code class="tool-name">{name}</code>{" "}
        <code class="tool-args">{args === null || args === undefined ? "" : formatJson(args)}</code>
      </div>
      {state === "approval" && approval ? (
        <div class="tool-approval">
          <span class="tool-label">approval</span> {approvalWords(approval, props.runLabel)}
        </div>
      ) : (
        <div class={`tool-result${result?.isError ? " tool-error" : ""}`}>
          <span class="tool-label">{result?.isError ? "tool error" : "result"}</span>{" "}
          {state === "running" ? <span class="hint">running…</span> : <code>{result?.content ?? "(no result recorded)"}</code>}
        </div>
      )}
    </div>
  );
}

/** Persisted messages; each tool result is shown with the call it answers. */
function Messages({
  messages,
  context,
  nodes,
  runId,
}: {
  messages: Message[];
  context: ThreadContext;
  nodes: ReadonlyMap<string, string>;
  /** The run that added them, if any: its checkpoint is where a user message is edited. */
  runId?: string;
}) {
  const results = new Map<string, Message>();
  for (const m of messages) if (m.role === "TOOL" && m.toolCallId) results.set(m.toolCallId, m);
  const answered = new Set<string>();
  for (const m of messages) for (const call of m.toolCalls) if (results.has(call.id)) answered.add(call.id);
  // A rejected call's result is the rejection: the API's messages carry no error flag, the recorded answer does.
  const rejected = (id: string | null) => {
    const approval = id ? context.approvals.get(id) : undefined;
    return approval?.state === "decided" && approval.outcome.decision === "reject";
  };
  return (
    <>
      {messages.map((m) => {
        if (m.role === "TOOL" && m.toolCallId && answered.has(m.toolCallId)) return null;
        if (m.role === "TOOL") {
          const call = m.toolCallId ? context.calls.get(m.toolCallId) : undefined;
          return (
            <li key={m.id} class="message message-tool">
              <ToolCard
                name={call?.name ?? m.name ?? "tool"}
                args={call?.args ?? null}
                result={{ content: m.content, isError: rejected(m.toolCallId) }}
                state="done"
                runLabel={context.runLabel}
              />
            </li>
          );
        }
        return (
          <Fragment key={m.id}>
            {m.content && (
              <Bubble
                role={m.role}
                content={m.content}
                node={nodes.get(m.id)}
                edit={m.role === "USER" && context.edits ? { tools: context.edits, message: m, runId } : undefined}
              />
            )}
            {m.toolCalls.map((call) => {
              const result = results.get(call.id);
              const approval = context.approvals.get(call.id);
              return (
                <li key={`${m.id}:${call.id}`} class="message message-tool">
                  <ToolCard
                    name={call.name}
                    args={call.args}
                    result={result ? { content: result.content, isError: rejected(call.id) } : null}
                    state={result ? "done" : approval ? "approval" : "none"}
                    approval={approval}
                    runLabel={context.runLabel}
                  />
                </li>
              );
            })}
          </Fragment>
        );
      })}
    </>
  );
}

/** What a WAITING run asked, in the thread where it asked it; the answer form sits above the composer. */
function WaitingOutcome({ run, runLabel }: { run: RunView; runLabel: RunLabel }) {
  return (
    <li class="outcome outcome-waiting">
      <article aria-label={`Run ${run.number} outcome`}>
        {run.interrupts.length === 0 && (
          <p>
            <strong>Run #{run.number} is waiting</strong> for an answer.
          </p>
        )}
        {run.interrupts.map((interrupt: Interrupt) => (
          <p key={interrupt.id}>
            <strong>
              Run #{run.number} {interrupt.state === "PENDING" ? "is waiting" : "waited"}
            </strong>{" "}
            at <code>{interrupt.node}</code> for {describeQuestion(interrupt)}
            {interrupt.state === "PENDING" && <>: answer it below.</>}
            {interrupt.state === "ANSWERED" && (
              <>
                {" "}
                — answered by {interrupt.answeredBy ? runLabel(interrupt.answeredBy.id) : "a later run"}: {describeAnswer(interrupt)}.
              </>
            )}
            {interrupt.state === "SUPERSEDED" && <> — a later message went ahead without answering it.</>}
          </p>
        ))}
      </article>
    </li>
  );
}

/** How a run that did not complete ended, in the thread where it happened. */
function Outcome({ run }: { run: RunView }) {
  return (
    <li class={`outcome outcome-${run.status.toLowerCase()}`}>
      <article aria-label={`Run ${run.number} outcome`}>
        <p>
          <strong>
            Run #{run.number} {run.status.toLowerCase()}
          </strong>
          {run.errorCode && (
            <>
              {" "}
              with <code>{run.errorCode}</code>
            </>
          )}
          {run.errorMessage && <>: {run.errorMessage}</>}
        </p>
        {run.partialOutput && (
          <p>
            Streamed before it stopped: <q>{run.partialOutput}</q>
          </p>
        )}
        {run.failedTasks.map((task) => (
          <p key={task.taskId}>
            Task <code>{task.node ?? "?"}</code> failed, running from the checkpoint at step {task.checkpoint.step}: {task.message}
          </p>
        ))}
      </article>
    </li>
  );
}
