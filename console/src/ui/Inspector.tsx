// The right pane: every run of the conversation (one attempt each: status,
// error, partial output, duration, usage, failed tasks, what it asked and who
// answered) and the thread's LangGraph checkpoints with the run each belongs
// to, each one a place to fork from. A failure LangGraph only records as a
// write against a checkpoint is shown against that checkpoint.
import { useState } from "preact/hooks";
import type { CheckpointView, RunView } from "../state/conversation-view.ts";
import { Duration, RunStatusBadge } from "./bits.tsx";
import { formatTime, formatUsage, shortId } from "./format.ts";
import { InterruptRecord, type RunLabel } from "./Interrupts.tsx";
import { isActive } from "../state/run-live.ts";
import { StateViewer, type StateTools } from "./StateViewer.tsx";

export function RunsPanel({ runs, total, onCancel, runLabel }: { runs: RunView[]; total: number; onCancel: (runId: string) => void; runLabel: RunLabel }) {
  return (
    <section class="panel" aria-labelledby="runs-heading">
      <h2 id="runs-heading">
        Runs <span class="count">{total}</span>
      </h2>
      {runs.length === 0 && <p class="hint">No runs yet.</p>}
      {runs.length < total && (
        <p class="hint">
          The latest {runs.length} of {total} runs.
        </p>
      )}
      <ol class="runs" reversed>
        {runs
          .slice()
          .reverse()
          .map((run) => (
            <li key={run.id}>
              <RunCard run={run} onCancel={onCancel} runLabel={runLabel} />
            </li>
          ))}
      </ol>
    </section>
  );
}

function RunCard({ run, onCancel, runLabel }: { run: RunView; onCancel: (runId: string) => void; runLabel: RunLabel }) {
  const running = isActive(run.status);
  return (
    <article aria-label={`Run ${run.number}`} class={`run run-${run.status.toLowerCase()}`}>
      <header class="run-head">
        <strong>#{run.number}</strong>
        <span class="kind">{run.kind}</span>
        <RunStatusBadge run={run} code={run.errorCode} />
        <Duration class="duration" startedAt={run.startedAt} finishedAt={run.finishedAt} />
      </header>
      <dl class="run-fields">
        <dt>id</dt>
        <dd title={run.id}>{shortId(run.id)}</dd>
        <dt>started</dt>
        <dd>{formatTime(run.startedAt)}</dd>
        {run.finishedAt && (
          <>
            <dt>finished</dt>
            <dd>{formatTime(run.finishedAt)}</dd>
          </>
        )}
        {run.input !== null && (
          <>
            <dt>input</dt>
            <dd class="clip">{run.input}</dd>
          </>
        )}
        {run.errorCode && (
          <>
            <dt>error code</dt>
            <dd>
              <code>{run.errorCode}</code>
            </dd>
          </>
        )}
        {run.errorMessage && (
          <>
            {/* A cancel is someone's choice, not a failure. */}
            <dt>{run.status === "CANCELLED" ? "why" : "error"}</dt>
            <dd class={run.status === "CANCELLED" ? undefined : "error-text"}>{run.errorMessage}</dd>
          </>
        )}
        {run.partialOutput && (
          <>
            <dt>partial output</dt>
            <dd class="clip">{run.partialOutput}</dd>
          </>
        )}
        {run.startCheckpoint && (run.kind === "RESUME" || run.kind === "EDIT") && (
          <>
            <dt>from</dt>
            <dd title={run.startCheckpoint.id}>checkpoint step {run.startCheckpoint.step}</dd>
          </>
        )}
        {run.usage && (
          <>
            <dt>usage</dt>
            <dd class="usage">{formatUsage(run.usage)}</dd>
          </>
        )}
      </dl>
      {run.interrupts.length > 0 && (
        <div class="interrupts">
          <h3>Asked</h3>
          <ul>
            {run.interrupts.map((interrupt) => (
              <InterruptRecord key={interrupt.id} interrupt={interrupt} runLabel={runLabel} />
            ))}
          </ul>
        </div>
      )}
      {run.failedTasks.length > 0 && (
        <div class="failed-tasks">
          <h3>Failed tasks</h3>
          <ul>
            {run.failedTasks.map((task) => (
              <li key={task.taskId}>
                <code>{task.node ?? "?"}</code> from checkpoint step {task.checkpoint.step} <span class="hint">({shortId(task.checkpoint.id)})</span>:{" "}
                <span class="error-text">{task.message}</span>
              </li>
            ))}
          </ul>
        </div>
      )}
      {running && (
        <button type="button" onClick={() => onCancel(run.id)}>
          Cancel run
        </button>
      )}
    </article>
  );
}

/** Forks at a checkpoint, with an optional first message; true when the fork was made. */
export type ForkAction = (checkpointId: string, message: string | null) => Promise<boolean>;

export function CheckpointsPanel({
  checkpoints,
  hasEarlier,
  onFork,
  tools,
}: {
  checkpoints: CheckpointView[];
  hasEarlier: boolean;
  onFork: ForkAction;
  tools?: StateTools;
}) {
  const [forking, setForking] = useState<string | null>(null);
  const [viewing, setViewing] = useState<string | null>(null);
  return (
    <section class="panel" aria-labelledby="checkpoints-heading">
      <h2 id="checkpoints-heading">
        Checkpoints <span class="count">{checkpoints.length}</span>
      </h2>
      {checkpoints.length === 0 ? (
        <p class="hint">No checkpoints yet.</p>
      ) : (
        <table class="checkpoints" aria-labelledby="checkpoints-heading">
          <thead>
            <tr>
              <th scope="col">Step</th>
              <th scope="col">Source</th>
              <th scope="col">Next</th>
              <th scope="col">Run</th>
              <th scope="col">Created</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {checkpoints.map((c) => (
              <CheckpointRows
                key={c.id}
                checkpoint={c}
                forking={forking === c.id}
                onForking={(on) => setForking(on ? c.id : null)}
                onFork={onFork}
                viewing={viewing === c.id}
                onViewing={(on) => setViewing(on ? c.id : null)}
                tools={tools}
              />
            ))}
          </tbody>
        </table>
      )}
      {hasEarlier && <p class="hint">Earlier checkpoints are not shown.</p>}
    </section>
  );
}

function CheckpointRows({
  checkpoint: c,
  forking,
  onForking,
  onFork,
  viewing,
  onViewing,
  tools,
}: {
  checkpoint: CheckpointView;
  forking: boolean;
  onForking: (on: boolean) => void;
  onFork: ForkAction;
  viewing: boolean;
  onViewing: (on: boolean) => void;
  tools?: StateTools;
}) {
  return (
    <>
      <tr class={c.failures.length ? "has-failure" : undefined} title={c.id}>
        <td>{c.step}</td>
        <td>{c.source.toLowerCase()}</td>
        <td>{c.next.length ? c.next.join(", ") : "—"}</td>
        <td>{c.runNumber !== null ? <>#{c.runNumber}</> : <span class="hint">none</span>}</td>
        <td>
          <time dateTime={c.createdAt}>{formatTime(c.createdAt)}</time>
        </td>
        <td>
          {tools && (
            <button type="button" class="link" aria-expanded={viewing} onClick={() => onViewing(!viewing)} title="The thread's state at this checkpoint">
              State
            </button>
          )}
          <button
            type="button"
            class="link"
            aria-expanded={forking}
            onClick={() => onForking(!forking)}
            title="A new conversation whose thread is this one's up to and including this checkpoint"
          >
            Fork here
          </button>
        </td>
      </tr>
      {c.lastMessage && (
        <tr class="preview-row" title={c.lastMessage.content}>
          <td colSpan={6}>
            <div class="preview">
              <b>{c.lastMessage.role.toLowerCase()}</b> {c.lastMessage.content}
            </div>
          </td>
        </tr>
      )}
      {viewing && tools && (
        <tr class="state-row">
          <td colSpan={6}>
            <StateViewer checkpointId={c.id} tools={tools} />
          </td>
        </tr>
      )}
      {forking && (
        <tr class="fork-row">
          <td colSpan={6}>
            <ForkForm step={c.step} onCancel={() => onForking(false)} onFork={(message) => onFork(c.id, message)} />
          </td>
        </tr>
      )}
      {c.failures.map((failure, i) => (
        <tr key={i} class="failure-row">
          <td colSpan={6}>
            ✗ <code>{failure.node ?? "?"}</code> failed from step {c.step} in run #{failure.runNumber}: <span class="error-text">{failure.message}</span>
          </td>
        </tr>
      ))}
    </>
  );
}

function ForkForm({ step, onCancel, onFork }: { step: number; onCancel: () => void; onFork: (message: string | null) => Promise<boolean> }) {
  const [message, setMessage] = useState("");
  const [busy, setBusy] = useState(false);
  return (
    <form
      aria-label={`Fork at step ${step}`}
      class="fork-form"
      onSubmit={async (event) => {
        event.preventDefault();
        setBusy(true);
        // On success the new conversation opens and this pane goes away.
        if (!(await onFork(message.trim() ? message : null))) setBusy(false);
      }}
    >
      <span>A new conversation from step {step}; this one stays as it is.</span>
      <input
        aria-label="First message (optional)"
        placeholder="First message (optional): starts a run at once"
        value={message}
        onInput={(e) => setMessage(e.currentTarget.value)}
        disabled={busy}
      />
      <div class="actions">
        <button type="submit" disabled={busy}>
          {message.trim() ? "Fork and send" : "Fork"}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
