// Small pieces used across the console.
import type { ConnectionStatus } from "../api/client.ts";
import { formatDuration, runDuration } from "./format.ts";
import { useNow, type Notice } from "./hooks.ts";

const CONNECTION_WORDS: Record<ConnectionStatus, string> = {
  connecting: "connecting…",
  connected: "connected",
  reconnecting: "reconnecting…",
  unauthorized: "token refused",
  offline: "offline: waiting for the network",
};

/** The connection as the client SDK reports it: connected only while its socket is up. */
export function ConnectionBadge({ status }: { status: ConnectionStatus }) {
  return (
    <span role="status" aria-label="Connection" class={`connection connection-${status}`}>
      {CONNECTION_WORDS[status]}
    </span>
  );
}

/**
 * A run status as a badge; a status this console does not know yet still
 * shows, in a neutral colour. A WAITING run whose question was answered or
 * superseded keeps its recorded status, marked resolved, so it no longer
 * looks like it waits.
 */
export function StatusBadge({ status, code, resolved = false }: { status: string | null | undefined; code?: string | null; resolved?: boolean }) {
  if (!status) return <span class="badge badge-none">no runs</span>;
  return (
    <span class={`badge badge-${status.toLowerCase()}${resolved ? " badge-resolved" : ""}`}>
      {status}
      {code && status !== "CANCELLED" ? <span class="badge-code"> {code}</span> : null}
    </span>
  );
}

/** What became of a WAITING run's questions: null while one is pending (or for any other run). */
export function waitedOutcome(run: { status: string; interrupts: { state: string }[] }): "answered" | "superseded" | null {
  if (run.status !== "WAITING" || run.interrupts.length === 0 || run.interrupts.some((i) => i.state === "PENDING")) return null;
  return run.interrupts.some((i) => i.state === "ANSWERED") ? "answered" : "superseded";
}

/** A run's status badge, with what became of a WAITING run's questions. */
export function RunStatusBadge({
  run,
  code,
}: {
  run: { status: string; interrupts: { state: string }[]; queuePosition?: number | null; queueReason?: string | null };
  code?: string | null;
}) {
  const waited = waitedOutcome(run);
  return (
    <>
      <StatusBadge status={run.status} code={waited ?? code} resolved={waited !== null} />
      {run.status === "QUEUED" && <QueuePlace position={run.queuePosition ?? null} reason={run.queueReason ?? null} />}
    </>
  );
}

const QUEUE_REASONS: Record<string, string> = {
  MODEL_BUSY: "the model is busy",
  INSTANCE_FULL: "the server is full",
  BEHIND_ACTIVE_RUN: "behind the conversation's run",
};

/** Where a queued run stands, as read with the conversation: its place in its model's queue and why it waits. */
function QueuePlace({ position, reason }: { position: number | null; reason: string | null }) {
  const why = reason ? (QUEUE_REASONS[reason] ?? reason.toLowerCase()) : null;
  return (
    <span class="hint queue-place">
      {position !== null ? `#${position} in line` : "in line"}
      {why ? ` · ${why}` : ""}
    </span>
  );
}

/** Refusals and failures of the user's actions: shown until dismissed, never swallowed. */
export function Notices({ notices, onDismiss }: { notices: Notice[]; onDismiss: (id: number) => void }) {
  if (!notices.length) return null;
  return (
    <ul class="notices">
      {notices.map((notice) => (
        <li key={notice.id} role="alert" class="notice">
          <span>{notice.text}</span>
          <button type="button" class="link" onClick={() => onDismiss(notice.id)} aria-label="Dismiss">
            Dismiss
          </button>
        </li>
      ))}
    </ul>
  );
}

/** A run's duration: finishedAt - startedAt, or ticking from startedAt while it runs. Only this text re-renders as it ticks. */
export function Duration({ startedAt, finishedAt, class: className }: { startedAt: string; finishedAt: string | null; class?: string }) {
  const now = useNow(finishedAt === null);
  return (
    <span class={className} title={finishedAt ? "took" : "running for"}>
      {formatDuration(runDuration(startedAt, finishedAt, now))}
    </span>
  );
}
