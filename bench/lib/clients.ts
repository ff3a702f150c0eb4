// The benchmark's clients: runledger's public API through the same client
// libraries an application would use (graphql-ws, graphql-sse, fetch), timing
// each token on arrival against the stamp the model put in it.
import type { Client as WsClient } from "graphql-ws";
import type { Client as SseClient } from "graphql-sse";
import { nowMs, readStamps } from "../../testkit/clock.ts";
import { RUN_TOKENS } from "../../testkit/documents.ts";
import { sseClient, wsClient } from "../../testkit/graphql.ts";

export type Transport = "ws" | "sse";

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

/** Resolves once a client that is not lazy has its connection acknowledged. */
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

/** Subscribes to a run's events over one client and times every token. */
export function subscribeTokens(client: WsClient | SseClient, runId: string): TokenSubscription {
  const log = newLog();
  let markLive!: () => void;
  const live = new Promise<void>((resolve) => (markLive = resolve));
  let dispose: () => void = () => {};
  const done = new Promise<TokenLog>((resolve, reject) => {
    dispose = client.subscribe<any>(
      { query: RUN_TOKENS, variables: { runId } },
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
