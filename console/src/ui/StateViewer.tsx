// A checkpoint opened: the thread's state at that point (Checkpoint.state),
// its messages shown as the thread shows them, every other channel, the
// metadata and the writes recorded against it as JSON trees. From here a
// person edits a message and runs on from it (in place or in a fork), or, for
// a graph agent, edits the state itself.
import { useEffect, useState } from "preact/hooks";
import type { Api } from "../api/client.ts";
import { CHECKPOINT_STATE } from "../api/state-documents.ts";
import type { ConsoleCheckpointStateQuery } from "../api/generated.ts";
import type { CheckpointView, StartedRun } from "../state/conversation-view.ts";
import { checkpointAdding, EditMessageForm, EditStateForm } from "./EditState.tsx";
import { shortId } from "./format.ts";
import "./state-panels.css";

type CheckpointState = Extract<NonNullable<ConsoleCheckpointStateQuery["node"]>, { state: unknown }>;

/** What the state viewer and the edits need of the conversation they belong to. */
export interface StateTools {
  api: Api;
  conversationId: string;
  agentName: string | null;
  /** GRAPH agents may have their state edited directly. */
  agentKind: string | null;
  /** The conversation's checkpoints, newest first (each message is edited at the one that added it). */
  checkpoints: readonly CheckpointView[];
  /** A run started here (an edit, a resume): shown and followed at once. */
  onRun(run: StartedRun): void;
  /** Opens another conversation (a fork), with the run started on it. */
  onOpen(conversationId: string, run: StartedRun | null): void;
  /** Tells the person why an action failed. */
  notify(text: string): void;
}

/** A message inside a state, as the Message type gives it. */
export interface StateMessage {
  id: string;
  role: string;
  content: string;
  toolCalls?: { id: string; name: string; args: unknown }[];
  toolCallId?: string | null;
  name?: string | null;
}

function isStateMessage(value: unknown): value is StateMessage {
  return typeof value === "object" && value !== null && typeof (value as StateMessage).role === "string" && "content" in value;
}

export function StateViewer({ checkpointId, tools }: { checkpointId: string; tools: StateTools }) {
  const [checkpoint, setCheckpoint] = useState<CheckpointState | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    tools.api.query(CHECKPOINT_STATE, { id: checkpointId }).then(
      (data) => {
        if (!live) return;
        const node = data.node as CheckpointState | Record<string, never> | null;
        if (node && "state" in node) setCheckpoint(node as CheckpointState);
        else setError("this checkpoint no longer exists");
      },
      (e: Error) => live && setError(e.message),
    );
    return () => {
      live = false;
    };
  }, [tools.api, checkpointId]);

  if (error) return <p class="notice">Could not read the state: {error}</p>;
  if (!checkpoint) return <p class="hint">Reading the state…</p>;

  const state = (checkpoint.state ?? {}) as Record<string, unknown>;
  const messages = Array.isArray(state.messages) ? state.messages.filter(isStateMessage) : [];
  const others = Object.fromEntries(Object.entries(state).filter(([key]) => key !== "messages"));
  // A message is edited where it was added: the oldest checkpoint whose last message it is.
  const addedAt = (message: StateMessage) => checkpointAdding(tools.checkpoints, message.id);

  return (
    <section class="state-viewer" aria-label={`State at step ${checkpoint.step}`}>
      <dl class="state-facts">
        <dt>checkpoint</dt>
        <dd title={checkpoint.id}>{shortId(checkpoint.id)}</dd>
        <dt>next</dt>
        <dd>{checkpoint.next.length ? checkpoint.next.join(", ") : "—"}</dd>
        <dt>parent</dt>
        <dd>{checkpoint.parent ? `step ${checkpoint.parent.step}` : "none"}</dd>
        <dt>run</dt>
        <dd>{checkpoint.run ? `${checkpoint.run.kind.toLowerCase()} ${shortId(checkpoint.run.id)}` : "none"}</dd>
      </dl>
      <h3>Messages ({messages.length})</h3>
      {messages.length === 0 ? (
        <p class="hint">No messages yet at this checkpoint.</p>
      ) : (
        <ol class="state-messages" aria-label="Messages at this checkpoint">
          {messages.map((message) => {
            const at = message.role === "USER" ? addedAt(message) : null;
            return (
              <li key={message.id} class={`message message-${message.role.toLowerCase()}`}>
                <StateMessageView message={message} />
                {message.role === "USER" && editing !== message.id && (
                  <button
                    type="button"
                    class="link"
                    disabled={!at}
                    title={at ? `Edit it at step ${at.step}, where it was added, and run on from there` : "The checkpoint that added it is not listed"}
                    onClick={() => setEditing(message.id)}
                  >
                    Edit and re-run from here
                  </button>
                )}
                {editing === message.id && at && (
                  <EditMessageForm tools={tools} message={message} checkpointId={at.id} step={at.step} onClose={() => setEditing(null)} />
                )}
              </li>
            );
          })}
        </ol>
      )}
      <h3>Other values</h3>
      {Object.keys(others).length === 0 ? <p class="hint">Only messages.</p> : <JsonTree label="Values" value={others} />}
      <h3>Metadata</h3>
      <JsonTree label="Metadata" value={checkpoint.metadata} />
      {checkpoint.writes.length > 0 && (
        <>
          <h3>Writes ({checkpoint.writes.length})</h3>
          <JsonTree label="Writes" value={checkpoint.writes.map(({ taskId, channel, idx, value }) => ({ taskId, channel, idx, value }))} />
        </>
      )}
      {tools.agentKind === "GRAPH" && <EditStateForm tools={tools} checkpointId={checkpoint.id} step={checkpoint.step} state={state} />}
    </section>
  );
}

const ROLE_LABELS: Record<string, string> = { USER: "You", ASSISTANT: "Assistant", TOOL: "Tool result" };

function StateMessageView({ message }: { message: StateMessage }) {
  return (
    <article aria-label={ROLE_LABELS[message.role] ?? message.role}>
      {message.content && <p class="message-text">{message.content}</p>}
      {(message.toolCalls ?? []).map((call) => (
        <div key={call.id} class="tool-call">
          <span class="tool-label">tool call</span> <code class="tool-name">{call.name}</code> <code class="tool-args">{JSON.stringify(call.args)}</code>
        </div>
      ))}
      {message.role === "TOOL" && message.toolCallId && <span class="hint">answers {shortId(message.toolCallId)}</span>}
    </article>
  );
}

/** A JSON value as a tree of disclosures; the top two levels open. */
export function JsonTree({ label, value }: { label: string; value: unknown }) {
  return (
    <div class="json-tree" role="group" aria-label={label}>
      <JsonNode name={null} value={value} depth={0} />
    </div>
  );
}

function JsonNode({ name, value, depth }: { name: string | null; value: unknown; depth: number }) {
  const key = name === null ? null : <span class="json-key">{name}: </span>;
  if (value !== null && typeof value === "object") {
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
    const summary = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
    if (entries.length === 0) {
      return (
        <div class="json-leaf">
          {key}
          <span class="json-empty">{Array.isArray(value) ? "[]" : "{}"}</span>
        </div>
      );
    }
    return (
      <details class="json-branch" open={depth < 2}>
        <summary>
          {key}
          <span class="json-count">{summary}</span>
        </summary>
        <div class="json-children">
          {entries.map(([k, v]) => (
            <JsonNode key={k} name={k} value={v} depth={depth + 1} />
          ))}
        </div>
      </details>
    );
  }
  const kind = value === null ? "null" : typeof value;
  return (
    <div class="json-leaf">
      {key}
      <span class={`json-${kind}`}>{kind === "string" ? JSON.stringify(value) : String(value)}</span>
    </div>
  );
}
