// Small pieces used across the console.
import type { ConnectionStatus } from "../api/client.ts";
import type { Notice } from "./hooks.ts";

const CONNECTION_WORDS: Record<ConnectionStatus, string> = {
  connecting: "connecting…",
  connected: "connected",
  reconnecting: "reconnecting…",
  unauthorized: "token refused",
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
