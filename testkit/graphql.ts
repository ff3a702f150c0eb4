// Real GraphQL clients for the specs and the benchmark: plain HTTP POST,
// graphql-ws over a WebSocket, and graphql-sse over HTTP.
import { createClient as createWsClient, type Client as WsClient } from "graphql-ws";
import { createClient as createSseClient, type Client as SseClient } from "graphql-sse";
import WebSocket from "ws";
import { START_RUN } from "./documents.ts";

export interface GraphQLResponse<T = any> {
  data?: T;
  errors?: { message: string; extensions?: Record<string, unknown>; path?: unknown[] }[];
}

export async function gql<T = any>(
  baseUrl: string,
  query: string,
  variables?: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<GraphQLResponse<T>> {
  const response = await fetch(`${baseUrl}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/graphql-response+json", ...headers },
    body: JSON.stringify({ query, variables }),
  });
  return (await response.json()) as GraphQLResponse<T>;
}

/** gql(), failing the test on any GraphQL error. */
export async function gqlOk<T = any>(baseUrl: string, query: string, variables?: Record<string, unknown>): Promise<T> {
  const result = await gql<T>(baseUrl, query, variables);
  if (result.errors?.length) throw new Error(`GraphQL errors: ${JSON.stringify(result.errors)}`);
  return result.data!;
}

export interface StartedRun {
  runId: string;
  conversationId: string;
  run: { id: string; status: string; kind: string; input: string | null; startedAt: string };
  conversation: { id: string; title: string; createdAt: string; updatedAt: string };
}

/** startRun, failing on a GraphQL error or on any answer but StartRunSuccess. */
export async function startRun(baseUrl: string, message: string, conversationId?: string): Promise<StartedRun> {
  const { startRun } = await gqlOk(baseUrl, START_RUN, { message, conversationId });
  if (startRun.__typename !== "StartRunSuccess") throw new Error(`startRun refused: ${JSON.stringify(startRun)}`);
  return { runId: startRun.run.id, conversationId: startRun.conversation.id, run: startRun.run, conversation: startRun.conversation };
}

export function wsClient(baseUrl: string, options: { token?: string; lazy?: boolean; connectionParams?: Record<string, unknown> } = {}): WsClient {
  return createWsClient({
    url: baseUrl.replace(/^http/, "ws") + "/graphql",
    webSocketImpl: WebSocket,
    lazy: options.lazy ?? true,
    // A non-lazy client reports the socket's close to console.error by default; tests watch the "closed" event instead.
    onNonLazyError: () => {},
    retryAttempts: 0,
    connectionParams:
      options.token || options.connectionParams
        ? { ...options.connectionParams, ...(options.token ? { authorization: `Bearer ${options.token}` } : {}) }
        : undefined,
  });
}

export function sseClient(baseUrl: string, headers: Record<string, string> = {}): SseClient {
  return createSseClient({ url: `${baseUrl}/graphql`, retryAttempts: 0, headers });
}

/** Collects every result of a subscription until it completes (or errors). */
export function collect<T = any>(
  client: WsClient | SseClient,
  query: string,
  variables?: Record<string, unknown>,
): { done: Promise<T[]>; results: T[]; dispose: () => void } {
  const results: T[] = [];
  let dispose = () => {};
  const done = new Promise<T[]>((resolve, reject) => {
    dispose = client.subscribe<T>(
      { query, variables },
      {
        next: (value) => {
          if (value.errors?.length) reject(new Error(JSON.stringify(value.errors)));
          else results.push(value.data as T);
        },
        error: (error) => reject(error instanceof Error ? error : new Error(JSON.stringify(error))),
        complete: () => resolve(results),
      },
    ) as () => void;
  });
  return { done, results, dispose: () => dispose() };
}
