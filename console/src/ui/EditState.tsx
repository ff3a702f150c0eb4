// Edits through editState, each recorded by the API as an EDIT run:
// - a user message, changed and run on from where it was added: in place (the
//   thread goes back to that point with the new text, and a resume runs the
//   agent on it) or in a fork (a new conversation copied up to that point gets
//   the edit and runs on; this one stays as it is), from the state viewer or
//   from the message's bubble in the thread;
// - a graph agent's state at a checkpoint: channel values as JSON, written as
//   one of its nodes, then, if asked, a resume.
import type { ComponentChildren } from "preact";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import type { Refusal } from "../api/client.ts";
import { FORK_CONVERSATION, RESUME_RUN } from "../api/documents.ts";
import { AGENT_GRAPH, EDIT_STATE, THREAD_HEAD } from "../api/state-documents.ts";
import type { CheckpointView, StartedRun } from "../state/conversation-view.ts";
import type { StateMessage, StateTools } from "./StateViewer.tsx";

type Place = "in-place" | "fork";

function refusalText(refusal: Refusal): string {
  return `${refusal.code} — ${refusal.message}`;
}

/**
 * Writes the edited message at `checkpointId` as the graph's input
 * (`__start__`), so the thread's next step is the graph's first node, then
 * resumes. Returns the conversation it happened in and its resume, or why not.
 */
async function editAndRerun(
  tools: StateTools,
  checkpointId: string,
  message: StateMessage,
  text: string,
  place: Place,
): Promise<{ ok: true; conversationId: string; resume: StartedRun } | { ok: false; why: string }> {
  const { api } = tools;
  let conversationId = tools.conversationId;
  let at = checkpointId;
  if (place === "fork") {
    const forked = await api.mutate(FORK_CONVERSATION, { checkpointId, message: null }, "forkConversation");
    if (!forked.ok) return { ok: false, why: `Could not fork: ${refusalText(forked.refusal)}` };
    conversationId = forked.value.conversation.id;
    // The fork's thread ends with its copy of the checkpoint.
    const head = (await api.query(THREAD_HEAD, { id: conversationId })).conversation?.checkpoints.edges.at(-1)?.node.id;
    if (!head) return { ok: false, why: "Could not read the fork's thread" };
    at = head;
  }
  const edited = { ...message, content: text };
  const edit = await api.mutate(EDIT_STATE, { checkpointId: at, values: { messages: [edited] }, asNode: "__start__" }, "editState");
  if (!edit.ok) return { ok: false, why: `Could not edit the message: ${refusalText(edit.refusal)}` };
  if (edit.value.run.status !== "COMPLETED") return { ok: false, why: `The edit failed: ${edit.value.run.errorMessage ?? edit.value.run.status}` };
  if (place === "in-place") tools.onRun(edit.value.run);
  const resumed = await api.mutate(RESUME_RUN, { conversationId }, "resumeRun");
  if (!resumed.ok) return { ok: false, why: `Edited, but could not run on: ${refusalText(resumed.refusal)}` };
  return { ok: true, conversationId, resume: resumed.value.run };
}

/**
 * The checkpoint that added a message: the oldest listed whose last message it
 * is. An edited message keeps its id, so its edit run's checkpoint holds it
 * too: the run that shows the message is preferred when given.
 */
export function checkpointAdding(checkpoints: readonly CheckpointView[], messageId: string, runId?: string): CheckpointView | null {
  const holding = [...checkpoints].reverse().filter((c) => c.lastMessage?.id === messageId);
  return holding.find((c) => runId !== undefined && c.run?.id === runId) ?? holding[0] ?? null;
}

export function EditMessageForm(props: {
  tools: StateTools;
  message: StateMessage;
  checkpointId: string;
  step: number;
  onClose: () => void;
  /** Called once the edit and its run have started. */
  onSaved?: () => void;
  submitLabel?: string;
}) {
  const { tools, message } = props;
  const [text, setText] = useState(message.content);
  const [place, setPlace] = useState<Place>("in-place");
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const field = useRef<HTMLTextAreaElement>(null);
  // Opened to be typed in; before the thread's layout settles, so the thread sees the focus and keeps the form in view.
  useLayoutEffect(() => field.current?.focus(), []);
  return (
    <form
      aria-label="Edit the message and re-run"
      class="edit-form"
      onSubmit={async (event) => {
        event.preventDefault();
        setBusy(true);
        setProblem(null);
        const outcome = await editAndRerun(tools, props.checkpointId, message, text, place);
        setBusy(false);
        if (!outcome.ok) return setProblem(outcome.why);
        if (place === "fork") tools.onOpen(outcome.conversationId, outcome.resume);
        else tools.onRun(outcome.resume);
        props.onSaved?.();
        props.onClose();
      }}
    >
      <label class="json-field">
        New text
        <textarea rows={3} ref={field} value={text} onInput={(e) => setText(e.currentTarget.value)} disabled={busy} />
      </label>
      <fieldset class="edit-place">
        <legend>Where</legend>
        <label>
          <input type="radio" name="place" checked={place === "in-place"} onChange={() => setPlace("in-place")} disabled={busy} /> In place: this conversation
          goes back to step {props.step}
        </label>
        <label>
          <input type="radio" name="place" checked={place === "fork"} onChange={() => setPlace("fork")} disabled={busy} /> In a fork: a new conversation; this
          one stays as it is
        </label>
      </fieldset>
      {problem && (
        <p role="alert" class="notice">
          {problem}
        </p>
      )}
      <div class="actions">
        <button type="submit" disabled={busy || !text.trim() || text === message.content}>
          {props.submitLabel ?? "Re-run from here"}
        </button>
        <button type="button" onClick={props.onClose} disabled={busy}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/**
 * A user message's edit in the thread: an Edit action under its bubble that
 * opens the edit form in its place, at the checkpoint that added it.
 */
export function EditInThread(props: { tools: StateTools; message: StateMessage; runId?: string; onSaved: () => void; children: ComponentChildren }) {
  const { tools, message } = props;
  const [editing, setEditing] = useState(false);
  const at = checkpointAdding(tools.checkpoints, message.id, props.runId);
  if (editing && at) {
    return (
      <EditMessageForm
        tools={tools}
        message={message}
        checkpointId={at.id}
        step={at.step}
        submitLabel="Save and re-run"
        onSaved={props.onSaved}
        onClose={() => setEditing(false)}
      />
    );
  }
  return (
    <>
      {props.children}
      <button
        type="button"
        class="link message-action"
        disabled={!at}
        title={at ? `Edit this message and re-run from here (step ${at.step}, where it was added)` : "The checkpoint that added it is not listed"}
        onClick={() => setEditing(true)}
      >
        Edit
      </button>
    </>
  );
}

/** The nodes an edit may be written as: the graph's own, __start__ included, never __end__ or a subgraph's inner nodes. */
function useUpdateNodes(tools: StateTools): string[] {
  const [nodes, setNodes] = useState<string[]>([]);
  useEffect(() => {
    let live = true;
    tools.api.query(AGENT_GRAPH, {}).then(
      (data) => {
        const graph = data.agents.find((a) => a.name === tools.agentName)?.graph;
        if (live && graph) setNodes(graph.nodes.map((n) => n.id.split(":")[0]!).filter((id, i, all) => id !== "__end__" && all.indexOf(id) === i));
      },
      () => {},
    );
    return () => {
      live = false;
    };
  }, [tools.api, tools.agentName]);
  return nodes;
}

export function EditStateForm(props: { tools: StateTools; checkpointId: string; step: number; state: Record<string, unknown> }) {
  const { tools } = props;
  const [open, setOpen] = useState(false);
  const [text, setText] = useState(() => JSON.stringify(props.state, null, 2));
  const [asNode, setAsNode] = useState("");
  const [resume, setResume] = useState(true);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const nodes = useUpdateNodes(tools);
  if (!open) {
    return (
      <button type="button" onClick={() => setOpen(true)}>
        Edit state
      </button>
    );
  }
  const submit = async () => {
    let values: unknown;
    try {
      values = JSON.parse(text);
    } catch (error) {
      return setProblem(`Not JSON: ${(error as Error).message}`);
    }
    setBusy(true);
    setProblem(null);
    const edit = await tools.api.mutate(EDIT_STATE, { checkpointId: props.checkpointId, values, asNode: asNode || null }, "editState");
    if (!edit.ok) {
      setBusy(false);
      return setProblem(`Could not edit the state: ${refusalText(edit.refusal)}`);
    }
    tools.onRun(edit.value.run);
    if (edit.value.run.status !== "COMPLETED") {
      setBusy(false);
      return setProblem(`The edit failed: ${edit.value.run.errorMessage ?? edit.value.run.status}`);
    }
    if (resume && edit.value.checkpoint?.next.length) {
      const resumed = await tools.api.mutate(RESUME_RUN, { conversationId: tools.conversationId }, "resumeRun");
      if (resumed.ok) tools.onRun(resumed.value.run);
      else tools.notify(`Edited, but could not run on: ${refusalText(resumed.refusal)}`);
    }
    setBusy(false);
    setOpen(false);
  };
  return (
    <form
      aria-label="Edit state"
      class="edit-form"
      onSubmit={(event) => {
        event.preventDefault();
        void submit();
      }}
    >
      <span>
        A new checkpoint after step {props.step}, recorded as an edit run. Messages with an existing id replace that message; channels left out keep their
        values.
      </span>
      <label class="json-field">
        Values (JSON)
        <textarea rows={10} value={text} onInput={(e) => setText(e.currentTarget.value)} disabled={busy} spellcheck={false} />
      </label>
      <label>
        As node{" "}
        <select value={asNode} onChange={(e) => setAsNode(e.currentTarget.value)} disabled={busy}>
          <option value="">(LangGraph decides)</option>
          {nodes.map((node) => (
            <option key={node} value={node}>
              {node}
            </option>
          ))}
        </select>
      </label>
      <label>
        <input type="checkbox" checked={resume} onChange={(e) => setResume(e.currentTarget.checked)} disabled={busy} /> Run on from the edit
      </label>
      {problem && (
        <p role="alert" class="notice">
          {problem}
        </p>
      )}
      <div class="actions">
        <button type="submit" disabled={busy}>
          Save edit
        </button>
        <button type="button" onClick={() => setOpen(false)} disabled={busy}>
          Cancel
        </button>
      </div>
    </form>
  );
}
