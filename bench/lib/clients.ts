// The benchmark's clients: runledger's public API through the same client
// libraries an application would use (graphql-ws, graphql-sse, fetch), timing
// each token on arrival against the stamp the model put in it.
import { createClient as createWsClient, type Client as WsClient } from "graphql-ws";
import { createClient as createSseClient, type Client as SseClient } from "graphql-sse";
import WebSocket from "ws";
import { nowMs, readStamps } from "../../test/support/clock.ts";

export type Transport = "ws" | "sse";

export const START_RUN = /* GraphQL */ `
  mutation Start($conversationId: ID, $message: String!) {
    startRun(input: { conversationId: $conversationId, message: $message }) {
      __typename
      ... on StartRunSuccess { run { id } conversation { id } }
      ... on Error { code message }
    }
  }
`;

/** What a chat client asks for while a run streams. */
export const RUN_EVENTS = /* GraphQL */ `
  subscription RunEvents($runId: ID!) {
    runEvents(runId: $runId) {
      __typename
      seq
      at
      ... on TokenEvent { text messageId }
      ... on RunStatusEvent { status errorCode errorMessage }
    }
  }
`;

export async function graphql<T = any>(url: string, query: string, variables?: Record<string, unknown>): Promise<T> {
  const response = await fetch(`${url}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/graphql-response+json" },
    body: JSON.stringify({ query, variables }),
  });
  const result = (await response.json()) as { data?: T; errors?: unknown[] };
  if (result.errors?.length) throw new Error(`GraphQL errors: ${JSON.stringify(result.errors)}`);
  return result.data!;
}

export async function startRun(url: string, message: string, conversationId?: string): Promise<{ runId: string; conversationId: string }> {
  const { startRun } = await graphql(url, START_RUN, { message, conversationId });
  if (startRun.__typename !== "StartRunSuccess") throw new Error(`startRun refused: ${JSON.stringify(startRun)}`);
  return { runId: startRun.run.id, conversationId: startRun.conversation.id };
}

/** One subscriber's view of a run's tokens. */
export interface TokenLog {
  /** Arrival minus model send time, per token, in ms. */
  latencies: number[];
  /** Token indexes received, in arrival order. */
  indexes: number[];
  /** Arrival time of the first token on the shared clock. */
  firstTokenAt: number | null;
  /** The first token's stamp. */
  firstStamp: { sentAt: number; requestAt: number } | null;
  /** When the RUNNING status event arrived (the subscription is live from then on). */
  runningAt: number | null;
  finalStatus: string | null;
  /** How the subscription ended when it did not complete normally (close code, error). */
  endedBy?: string;
}

export interface TokenSubscription {
  log: TokenLog;
  /** Settles when the subscriber has seen the RUNNING status event. */
  live: Promise<void>;
  /** Settles when the subscription completes after the terminal event. */
  done: Promise<TokenLog>;
  dispose(): void;
}

export function newLog(): TokenLog {
  return { latencies: [], indexes: [], firstTokenAt: null, firstStamp: null, runningAt: null, finalStatus: null };
}

/** Records one token's text arriving now. */
export function noteToken(log: TokenLog, text: string, receivedAt = nowMs()): void {
  for (const stamp of readStamps(text)) {
    if (log.firstTokenAt === null) {
      log.firstTokenAt = receivedAt;
      log.firstStamp = { sentAt: stamp.sentAt, requestAt: stamp.requestAt };
    }
    log.latencies.push(receivedAt - stamp.sentAt);
    log.indexes.push(stamp.index);
  }
}

/** A graphql-ws client; `keepOpen` connects at once and holds the socket between subscriptions, as a chat page does. */
export function wsClient(url: string, keepOpen = false): WsClient {
  return createWsClient({ url: url.replace(/^http/, "ws") + "/graphql", webSocketImpl: WebSocket, lazy: !keepOpen, retryAttempts: 0 });
}

/** Resolves once a keepOpen client has its connection acknowledged. */
export function connected(client: WsClient): Promise<void> {
  return new Promise((resolve, reject) => {
    const off = client.on("connected", () => {
      off();
      offError();
      resolve();
    });
    const offError = client.on("error", (error) => {
      off();
      offError();
      reject(error instanceof Error ? error : new Error(String(error)));
    });
  });
}

export function sseClient(url: string): SseClient {
  return createSseClient({ url: `${url}/graphql`, retryAttempts: 0 });
}

/** Subscribes to a run's events over one client and times every token. */
export function subscribeTokens(client: WsClient | SseClient, runId: string): TokenSubscription {
  const log = newLog();
  let markLive!: () => void;
  const live = new Promise<void>((resolve) => (markLive = resolve));
  let dispose: () => void = () => {};
  const done = new Promise<TokenLog>((resolve, reject) => {
    dispose = client.subscribe<any>(
      { query: RUN_EVENTS, variables: { runId } },
      {
        next: (result) => {
          const receivedAt = nowMs();
          if (result.errors?.length) return reject(new Error(JSON.stringify(result.errors)));
          const event = result.data?.runEvents;
          if (event?.__typename === "TokenEvent") noteToken(log, event.text, receivedAt);
          else if (event?.__typename === "RunStatusEvent") {
            if (event.status === "RUNNING") {
              log.runningAt ??= receivedAt;
              markLive();
            } else log.finalStatus = event.status;
          }
        },
        error: (error) => reject(error instanceof Error ? error : new Error(JSON.stringify(error))),
        complete: () => {
          markLive();
          resolve(log);
        },
      },
    ) as () => void;
  });
  return { log, live, done, dispose: () => dispose() };
}

export function createClient(transport: Transport, url: string): WsClient | SseClient {
  return transport === "ws" ? wsClient(url) : sseClient(url);
}

/** Every index 0..expected-1 exactly once. */
export function gotEveryToken(log: TokenLog, expected: number): boolean {
  if (log.indexes.length !== expected) return false;
  const seen = new Set(log.indexes);
  return seen.size === expected && log.indexes.every((i) => i >= 0 && i < expected);
}
