// The right pane: every run of the conversation (one attempt each: status,
// error, partial output, duration, failed tasks) and the thread's LangGraph
// checkpoints with the run each belongs to. A failure LangGraph only records
// as a write against a checkpoint is shown against that checkpoint.
import type { CheckpointView, RunView } from "../state/conversation-view.ts";
import { Duration, StatusBadge } from "./bits.tsx";
import { formatTime, shortId } from "./format.ts";

export function RunsPanel({ runs, total, onCancel }: { runs: RunView[]; total: number; onCancel: (runId: string) => void }) {
  return (
    <section class="panel" aria-labelledby="runs-heading">
      <h2 id="runs-heading">
        Runs <span class="count">{total}</span>
      </h2>
      {runs.length === 0 && <p class="hint">No runs yet.</p>}
      {runs.length < total && <p class="hint">The latest {runs.length} of {total} runs.</p>}
      <ol class="runs" reversed>
        {runs
          .slice()
          .reverse()
          .map((run) => (
            <li key={run.id}>
              <RunCard run={run} onCancel={onCancel} />
            </li>
          ))}
      </ol>
    </section>
  );
}

function RunCard({ run, onCancel }: { run: RunView; onCancel: (runId: string) => void }) {
  const running = run.status === "RUNNING";
  return (
    <article aria-label={`Run ${run.number}`} class={`run run-${run.status.toLowerCase()}`}>
      <header class="run-head">
        <strong>#{run.number}</strong>
        <span class="kind">{run.kind}</span>
        <StatusBadge status={run.status} code={run.errorCode} />
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
            <dt>error</dt>
            <dd class="error-text">{run.errorMessage}</dd>
          </>
        )}
        {run.partialOutput && (
          <>
            <dt>partial output</dt>
            <dd class="clip">{run.partialOutput}</dd>
          </>
        )}
        {/* Usage (input and output tokens, time to first token) goes here once the API reports Run.usage. */}
      </dl>
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

export function CheckpointsPanel({ checkpoints, hasEarlier }: { checkpoints: CheckpointView[]; hasEarlier: boolean }) {
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
              {/* An actions column ("Fork from here") joins once the API has forkConversation. */}
            </tr>
          </thead>
          <tbody>
            {checkpoints.map((c) => (
              <CheckpointRows key={c.id} checkpoint={c} />
            ))}
          </tbody>
        </table>
      )}
      {hasEarlier && <p class="hint">Earlier checkpoints are not shown.</p>}
    </section>
  );
}

function CheckpointRows({ checkpoint: c }: { checkpoint: CheckpointView }) {
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
      </tr>
      {c.failures.map((failure, i) => (
        <tr key={i} class="failure-row">
          <td colSpan={5}>
            ✗ <code>{failure.node ?? "?"}</code> failed from step {c.step} in run #{failure.runNumber}: <span class="error-text">{failure.message}</span>
          </td>
        </tr>
      ))}
    </>
  );
}
