// The page's one runledger client, and its credential provider: it asks this
// app's server for a token (GET /token) and keeps it until shortly before it
// expires. The client asks on every connection and request, and again when
// runledger refuses a token (an expired one closes the socket with 4401): a
// fresh one is fetched then, and the streams carry on after their last seq.
import { createRunledgerClient, type CredentialProvider, type RunledgerClient } from "@runledger/client";
import type { Token } from "./shared.ts";

export function tokenProvider(endpoint = "/token"): CredentialProvider {
  let held: (Token & { renewAt: number }) | null = null;
  let asking: Promise<Token> | null = null;
  return async () => {
    if (!held || Date.now() >= held.renewAt) {
      asking ??= fetch(endpoint, { cache: "no-store" })
        .then((response) => {
          if (!response.ok) throw new Error(`GET ${endpoint}: HTTP ${response.status}`);
          return response.json() as Promise<Token>;
        })
        .finally(() => (asking = null));
      const fetchedAt = Date.now();
      const token = await asking;
      // Renewed once three quarters of its life have passed (30 s before it expires at most).
      const life = token.expiresAt === null ? Infinity : token.expiresAt - fetchedAt;
      held = { ...token, renewAt: fetchedAt + Math.max(life - Math.min(30_000, life / 4), 0) };
    }
    return held.token;
  };
}

export function createChatClient(api: string): RunledgerClient {
  return createRunledgerClient({ url: api, credentials: tokenProvider() });
}
