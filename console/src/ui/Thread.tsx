// The chat: the thread's messages grouped by the run that added them, so an
// attempt that failed, was cancelled or was interrupted shows where it
// happened, with its error, instead of disappearing between two answers.
// A running run shows what it streams: tokens, tool calls and their results.
import { Fragment } from "preact";
import { useEffect, useRef } from "preact/hooks";
import type { Message } from "../api/types.ts";
import type { RunView } from "../state/conversation-view.ts";
import type { LiveItem } from "../state/run-live.ts";
import { Duration, StatusBadge } from "./bits.tsx";
import { formatJson } from "./format.ts";

export function Thread({ earlier, runs }: { earlier: Message[]; runs: RunView[] }) {
  const box = useRef<HTMLDivElement>(null);
  // Follow the newest output as it streams, unless the reader has scrolled up to read.
  const following = useRef(true);
  const last = runs.at(-1);
  const liveLength = last?.live?.items.reduce((n, item) => n + (item.kind === "text" ? item.text.length : 1), 0) ?? 0;
  useEffect(() => {
    const element = box.current;
    if (element && following.current) element.scrollTop = element.scrollHeight;
  }, [runs.length, last?.status, liveLength, last?.messages.length, earlier.length]);

  return (
    <div
      class="thread"
      role="log"
      aria-label="Messages"
      ref={box}
      onScroll={(event) => {
        const element = event.currentTarget;
        following.current = element.scrollHeight - element.scrollTop - element.clientHeight < 40;
      }}
    >
      <ol>
        {earlier.length > 0 && (
          <>
            <li class="run-divider">
              <span>Earlier messages</span>
            </li>
            <Messages messages={earlier} />
          </>
        )}
        {runs.map((run) => (
          <RunTurn key={run.id} run={run} />
        ))}
      </ol>
    </div>
  );
}

function RunTurn({ run }: { run: RunView }) {
  const ended = run.status !== "RUNNING";
  return (
    <>
      <li class="run-divider">
        <span>
          Run #{run.number} · {run.kind.toLowerCase()}
        </span>{" "}
        <StatusBadge status={run.status} /> <Duration class="hint" startedAt={run.startedAt} finishedAt={run.finishedAt} />
      </li>
      {run.live ? <LiveTurn run={run} /> : <Messages messages={run.messages} />}
      {ended && run.status !== "COMPLETED" && <Outcome run={run} />}
    </>
  );
}

function LiveTurn({ run }: { run: RunView }) {
  const live = run.live!;
  const running = run.status === "RUNNING";
  return (
    <>
      {run.kind === "START" && run.input !== null && <Bubble role="USER" content={run.input} />}
      {live.items.map((item) => (
        <LiveEntry key={item.key} item={item} streaming={running && item === live.items.at(-1)} />
      ))}
      {running && live.items.length === 0 && (
        <li class="message message-assistant waiting">
          <span class="hint">Waiting for the model…</span>
        </li>
      )}
    </>
  );
}

function LiveEntry({ item, streaming }: { item: LiveItem; streaming: boolean }) {
  switch (item.kind) {
    case "text":
      return <Bubble role="ASSISTANT" content={item.text} streaming={streaming} />;
    case "tool":
      return (
        <li class="message message-tool">
          <ToolCard name={item.name} args={item.args} result={item.result} pending={item.result === null} />
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

function Bubble({ role, content, streaming = false }: { role: string; content: string; streaming?: boolean }) {
  return (
    <li class={`message message-${role.toLowerCase()}${streaming ? " streaming" : ""}`}>
      <article aria-label={ROLE_LABELS[role] ?? role} aria-busy={streaming || undefined}>
        <p class="message-text">{content}</p>
      </article>
    </li>
  );
}

function ToolCard({ name, args, result, pending }: { name: string; args: unknown; result: { content: string; isError: boolean } | null; pending: boolean }) {
  return (
    <div role="group" aria-label={`Tool call ${name}`} class="tool-card">
      <div class="tool-call">
        <span class="tool-label">tool call</span> <code class="tool-name">{name}</code> <code class="tool-args">{args === null ? "" : formatJson(args)}</code>
      </div>
      <div class={`tool-result${result?.isError ? " tool-error" : ""}`}>
        <span class="tool-label">{result?.isError ? "tool error" : "result"}</span>{" "}
        {pending ? <span class="hint">running…</span> : <code>{result?.content ?? "(no result recorded)"}</code>}
      </div>
    </div>
  );
}

/** Persisted messages; each tool result is shown with the call it answers. */
function Messages({ messages }: { messages: Message[] }) {
  const results = new Map<string, Message>();
  for (const m of messages) if (m.role === "TOOL" && m.toolCallId) results.set(m.toolCallId, m);
  const answered = new Set<string>();
  for (const m of messages) for (const call of m.toolCalls) if (results.has(call.id)) answered.add(call.id);
  return (
    <>
      {messages.map((m) => {
        if (m.role === "TOOL" && m.toolCallId && answered.has(m.toolCallId)) return null;
        if (m.role === "TOOL") {
          return (
            <li key={m.id} class="message message-tool">
              <ToolCard name={m.name ?? "tool"} args={null} result={{ content: m.content, isError: false }} pending={false} />
            </li>
          );
        }
        return (
          <Fragment key={m.id}>
            {m.content && <Bubble role={m.role} content={m.content} />}
            {m.toolCalls.map((call) => {
              const result = results.get(call.id);
              return (
                <li key={`${m.id}:${call.id}`} class="message message-tool">
                  <ToolCard name={call.name} args={call.args} result={result ? { content: result.content, isError: false } : null} pending={false} />
                </li>
              );
            })}
          </Fragment>
        );
      })}
    </>
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
