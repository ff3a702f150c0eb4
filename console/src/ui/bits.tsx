// Small pieces used across the console.
import type { ConnectionStatus } from "../api/client.ts";
import { formatDuration, runDuration } from "./format.ts";
import { useNow, type Notice } from "./hooks.ts";

const CONNECTION_WORDS: Record<ConnectionStatus, string> = {
  connecting: "connecting…",
  connected: "connected",
  reconnecting: "reconnecting…",
  unauthorized: "token refused",
  disconnected: "disconnected: reload the page to reconnect",
};

export function ConnectionBadge({ status }: { status: ConnectionStatus }) {
  return (
    <span role="status" aria-label="Connection" class={`connection connection-${status}`}>
      {CONNECTION_WORDS[status]}
    </span>
  );
}

/** A run status as a badge; a status this console does not know yet still shows, in a neutral colour. */
export function StatusBadge({ status, code }: { status: string | null | undefined; code?: string | null }) {
  if (!status) return <span class="badge badge-none">no runs</span>;
  return (
    <span class={`badge badge-${status.toLowerCase()}`}>
      {status}
      {code && status !== "CANCELLED" ? <span class="badge-code"> {code}</span> : null}
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
