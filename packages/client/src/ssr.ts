// Server-side rendering: read a conversation on the server, render it, and
// hand the page the state it was rendered from. The page's store starts from
// that state (client.hydrate), shows exactly what the server rendered, and
// rejoins the live run after the state's lastSeq: nothing is replayed from the
// start, and nothing flashes.
import { createRunledgerClient, type RunledgerClient } from "./client.js";
import type { ConversationState } from "./snapshot.js";
import { memoryStorage } from "./resume.js";
import type { CredentialProvider } from "./transport.js";

/** Where loadConversation reads from: a client, or runledger's URL and a credential (a client is made and disposed for the read). */
export type ConversationSource =
  | RunledgerClient
  | {
      url: string;
      credentials?: CredentialProvider;
      fetch?: typeof fetch;
      /** A WebSocket class; without one, and with no global WebSocket (Node 20), the read uses Server-Sent Events. */
      webSocketImpl?: unknown;
    };

export interface LoadOptions {
  /** A live run's events are read until none came for this long (ms; default 40): the state then holds what it streamed so far. */
  settleMs?: number;
  /** A live run's events are read for this long at most (ms; default 400); the page reads the rest. */
  maxWaitMs?: number;
  /** The whole read fails after this long (ms; default 10 000). */
  timeoutMs?: number;
}

function isClient(source: ConversationSource): source is RunledgerClient {
  return typeof (source as RunledgerClient).conversation === "function";
}

/**
 * Reads a conversation on the server into plain JSON: its thread as stored,
 * and a live run with what it streamed so far and the seq that was (`liveRunId`,
 * `lastSeq`). Render from it with a store made by `client.hydrate(state)`
 * (React: `useConversation(id, {initial: state})`), and hand the same state to
 * the page, which hydrates from it and rejoins the run after `lastSeq`.
 * A conversation that does not exist (or is not the caller's) gives phase `missing`.
 */
export async function loadConversation(source: ConversationSource, conversationId: string, options: LoadOptions = {}): Promise<ConversationState> {
  const settleMs = options.settleMs ?? 40;
  const maxWaitMs = options.maxWaitMs ?? 400;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const client = isClient(source) ? source : createRunledgerClient({ ...source, storage: memoryStorage(), retries: 1 });
  const store = client.conversation(conversationId, { persist: false });
  let lastEvent = performance.now();
  const offEvents = store.onEvent(() => (lastEvent = performance.now()));
  try {
    const started = performance.now();
    let readyAt: number | null = null;
    for (;;) {
      const shown = store.getSnapshot();
      const now = performance.now();
      if (shown.phase !== "loading") {
        readyAt ??= now;
        if (!shown.busy) return store.serialize();
        // A live run: its retained events come at once, then the rest as it streams; stop once they pause.
        const quiet = (shown.run?.lastSeq ?? 0) > 0 && now - Math.max(lastEvent, readyAt) >= settleMs;
        if (quiet || now - readyAt >= maxWaitMs) return store.serialize();
      } else if (now - started > timeoutMs) {
        const error = shown.error;
        throw new Error(`could not read conversation ${conversationId}${error ? `: ${error.message}` : ""}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  } finally {
    offEvents();
    store.close();
    if (!isClient(source)) await client.dispose();
  }
}
