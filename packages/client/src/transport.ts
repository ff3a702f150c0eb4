// What the client needs from a connection to runledger: queries and mutations,
// subscriptions, and the connection's state. The WebSocket transport
// (websocket.ts), the SSE one (sse.ts) and the test transport (testing.ts)
// each implement it; HTTP requests are shared here.
import type { Readable } from "./observable.js";

/** One GraphQL operation as sent. */
export interface Operation {
  query: string;
  variables?: Record<string, unknown>;
}

export interface GraphQLErrorLike {
  message: string;
  extensions?: Record<string, unknown>;
}

/** A GraphQL response: data, errors, or both. */
export interface GraphQLResult<T = unknown> {
  data?: T | null;
  errors?: readonly GraphQLErrorLike[];
}

/**
 * A subscription's receiver. After any number of `next`, exactly one of
 * `error` or `complete` ends it, unless the subscriber ended it first.
 */
export interface Sink<T = unknown> {
  next(result: GraphQLResult<T>): void;
  /** A TransportError (kind "closed" when the connection carrying it dropped) or the GraphQL errors that refused it. */
  error(error: unknown): void;
  /** The server ended it. */
  complete(): void;
}

/**
 * - `connecting`: the first connection is being made;
 * - `connected`: subscriptions are live;
 * - `reconnecting`: the connection dropped (or never came up) and is tried again, with backoff;
 * - `unauthorized`: the server refused the credential (WebSocket close 4401, HTTP 401) and the
 *   credential provider had no other one; `reconnect()` tries again;
 * - `offline`: the device reports no network; reconnecting waits until it is back.
 */
export type ConnectionStatus = "connecting" | "connected" | "reconnecting" | "unauthorized" | "offline";

export interface ConnectionState {
  status: ConnectionStatus;
  /** The transport in use: "websocket", "sse", or a custom transport's name. */
  transport: string;
  /** Connections made after the first one: each means that subscriptions were made again. */
  reconnects: number;
}

export interface Transport {
  readonly connection: Readable<ConnectionState>;
  /** A query or mutation. Throws a TransportError when no answer came (the network, a 5xx, a refused credential). */
  request<T>(operation: Operation): Promise<GraphQLResult<T>>;
  /** A subscription; returns the function that ends it (no call to the sink follows). */
  subscribe<T>(operation: Operation, sink: Sink<T>): () => void;
  /** Tries to connect again at once: after `unauthorized` (a new credential), or to cut a backoff short. */
  reconnect(): void;
  dispose(): Promise<void>;
}

/**
 * A failure to reach the server or to keep a stream:
 * - `network`: no answer (fetch failed, the connection was refused or reset);
 * - `http`: an HTTP status without a GraphQL answer (`status` says which);
 * - `unauthorized`: the credential was refused, and asking the provider again did not help;
 * - `closed`: the connection carrying a subscription dropped.
 */
export class TransportError extends Error {
  override readonly name = "TransportError";
  constructor(
    readonly kind: "network" | "http" | "unauthorized" | "closed",
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }

  /** Whether the same request may succeed if sent again. */
  get retryable(): boolean {
    return (
      this.kind === "network" || this.kind === "closed" || (this.kind === "http" && (this.status === undefined || this.status >= 500 || this.status === 429))
    );
  }
}

/**
 * Answers the credential to send (an API key, API_TOKEN or a JWT), or null
 * (or undefined) for none. Asked on every connection, every HTTP request, and
 * again after the server refused one, so it can hand out a refreshed token.
 */
export type CredentialProvider = () => Promise<string | null | undefined> | string | null | undefined;

/** runledger's GraphQL endpoint from its base URL (http://127.0.0.1:4000) or the endpoint itself. */
export function graphqlEndpoint(url: string): string {
  const trimmed = url.replace(/\/+$/, "");
  return /\/graphql$/.test(trimmed) ? trimmed : `${trimmed}/graphql`;
}

export async function askCredential(credentials: CredentialProvider | undefined): Promise<string | undefined> {
  if (!credentials) return undefined;
  const value = await credentials();
  return value ? value : undefined;
}

export interface HttpOptions {
  /** runledger's base URL or its /graphql endpoint. */
  url: string;
  credentials?: CredentialProvider;
  /** The fetch to use; the global one by default. */
  fetch?: typeof fetch;
}

/**
 * POSTs one operation to /graphql. A 401 asks the credential provider again and
 * retries once with what it answers (a token may have been refreshed).
 * `accept` chooses a JSON answer or an SSE stream; the response is handed back
 * unread when it is one runledger answered as GraphQL.
 */
export async function post(options: HttpOptions, operation: Operation, accept: string, signal?: AbortSignal): Promise<Response> {
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const send = async (credential: string | undefined) => {
    try {
      return await fetchImpl(graphqlEndpoint(options.url), {
        method: "POST",
        headers: { "content-type": "application/json", accept, ...(credential ? { authorization: `Bearer ${credential}` } : {}) },
        body: JSON.stringify(operation),
        signal,
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new TransportError("network", `could not reach ${graphqlEndpoint(options.url)}: ${(error as Error).message}`);
    }
  };
  const credential = await askCredential(options.credentials);
  let response = await send(credential);
  if (response.status === 401) {
    await response.body?.cancel();
    const again = await askCredential(options.credentials);
    if (again === credential) throw new TransportError("unauthorized", "the server refused the credential", 401);
    response = await send(again);
    if (response.status === 401) {
      await response.body?.cancel();
      throw new TransportError("unauthorized", "the server refused the credential", 401);
    }
  }
  return response;
}

/** A query or mutation over HTTP: the GraphQL answer, whatever its status, or a TransportError. */
export async function httpRequest<T>(options: HttpOptions, operation: Operation): Promise<GraphQLResult<T>> {
  const response = await post(options, operation, "application/graphql-response+json, application/json");
  const type = response.headers.get("content-type") ?? "";
  if (type.includes("json")) {
    let body: unknown;
    try {
      body = await response.json();
    } catch (error) {
      throw new TransportError("network", `the answer broke off: ${(error as Error).message}`, response.status);
    }
    if (typeof body === "object" && body !== null && ("data" in body || "errors" in body)) return body as GraphQLResult<T>;
  } else {
    await response.body?.cancel();
  }
  throw new TransportError("http", `HTTP ${response.status} without a GraphQL answer`, response.status);
}
