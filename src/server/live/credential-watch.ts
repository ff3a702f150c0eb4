// Live streams end with their credential. A WebSocket is authenticated once, at
// connection_init, and an SSE response once, at its request: without this, a
// revoked API key or an expired JWT would keep receiving events (and, on a
// WebSocket, running operations) for as long as the connection stays open.
// Each watched stream is ended at its JWT's expiry, and every credential still
// open is checked again every CREDENTIAL_RECHECK_MS: a key revoked on any
// instance is read from the shared api_keys table.
import type { Principal } from "../../domain/principal.ts";
import type { Authenticator } from "../identity/authenticate.ts";
import { apiKeyHashOf } from "../identity/api-keys.ts";

/** The longest delay setTimeout takes; a longer one fires at once (a JWT valid for 25 days would end its stream at once). */
export const MAX_TIMER_MS = 2_147_483_647;

export interface CredentialWatch {
  /**
   * Calls `end` once the principal's credential no longer holds (its JWT expired,
   * its API key was revoked); answers the function that stops watching. A
   * credential that can neither expire nor be revoked (API_TOKEN, local) is not watched.
   */
  watch(principal: Principal, end: () => void): () => void;
  /** Streams watched now. */
  size(): number;
  /** Stops every timer (on shutdown). */
  close(): void;
}

export interface CredentialWatchOptions {
  authenticator: Pick<Authenticator, "stillValid">;
  /** `CREDENTIAL_RECHECK_MS`: how often an open stream's credential is read again. */
  recheckMs: number;
  /** Told when a check could not be made (the database is down): the stream stays open until a check succeeds. */
  onCheckError?: (error: unknown) => void;
}

interface Watched {
  principal: Principal;
  end: () => void;
  expiry?: NodeJS.Timeout;
}

export function createCredentialWatch({ authenticator, recheckMs, onCheckError }: CredentialWatchOptions): CredentialWatch {
  const watched = new Set<Watched>();
  let timer: NodeJS.Timeout | undefined;
  let checking = false;

  const finish = (entry: Watched) => {
    if (!watched.delete(entry)) return;
    clearTimeout(entry.expiry);
    if (watched.size === 0) stopTimer();
    entry.end();
  };

  // At the JWT's exp, in steps no longer than a timer can wait.
  const armExpiry = (entry: Watched) => {
    const at = entry.principal.expiresAt!.getTime();
    const wait = at - Date.now();
    if (wait <= 0) return finish(entry);
    entry.expiry = setTimeout(() => (Date.now() >= at ? finish(entry) : armExpiry(entry)), Math.min(wait, MAX_TIMER_MS));
    entry.expiry.unref();
  };

  const recheck = async () => {
    if (checking) return;
    checking = true;
    try {
      // One read per credential, however many streams it holds open.
      const verdicts = new Map<string | Principal, Promise<boolean>>();
      for (const entry of [...watched]) {
        const key = apiKeyHashOf(entry.principal) ?? entry.principal;
        let verdict = verdicts.get(key);
        if (!verdict) verdicts.set(key, (verdict = authenticator.stillValid(entry.principal)));
        let valid: boolean;
        try {
          valid = await verdict;
        } catch (error) {
          onCheckError?.(error);
          continue;
        }
        if (!valid) finish(entry);
      }
    } finally {
      checking = false;
    }
  };

  const startTimer = () => {
    if (timer) return;
    timer = setInterval(() => void recheck(), recheckMs);
    timer.unref();
  };
  const stopTimer = () => {
    clearInterval(timer);
    timer = undefined;
  };

  return {
    watch(principal, end) {
      const revocable = apiKeyHashOf(principal) !== undefined;
      if (!revocable && !principal.expiresAt) return () => {};
      const entry: Watched = { principal, end };
      watched.add(entry);
      if (principal.expiresAt) armExpiry(entry);
      if (revocable && watched.has(entry)) startTimer();
      return () => {
        if (!watched.delete(entry)) return;
        clearTimeout(entry.expiry);
        if (watched.size === 0) stopTimer();
      };
    },
    size: () => watched.size,
    close() {
      for (const entry of watched) clearTimeout(entry.expiry);
      watched.clear();
      stopTimer();
    },
  };
}
