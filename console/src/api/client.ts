// The console's one connection to runledger: urql for every operation, queries
// and mutations over HTTP (fetch), subscriptions over graphql-ws on the same
// /graphql path. The API token, when there is one, goes in the Authorization
// header and in the WebSocket's connection_init payload, as the server asks.
// A new token means a new Api: nothing from the old one is reused.
import { Client, fetchExchange, subscriptionExchange, type AnyVariables, type CombinedError } from "@urql/core";
import { createClient as createWsClient, type Client as WsClient } from "graphql-ws/client";
import type { Document } from "./documents.ts";

/** unauthorized: the token is missing or wrong; disconnected: the client gave up (a fatal close), only a reload helps. */
export type ConnectionStatus = "connecting" | "connected" | "reconnecting" | "unauthorized" | "disconnected";

export interface ConnectionState {
  status: ConnectionStatus;
  /** Counts reconnections: views refetch what they show when it changes (notices sent while away are lost). */
  reconnects: number;
}

/** The server's close code for a connection_init without a valid credential (missing, wrong or expired). */
const CLOSE_UNAUTHORIZED = 4401;
/** How often the client pings, and how long it waits for the pong before it drops the socket and reconnects. */
const KEEPALIVE_MS = 10_000;
const PONG_WAIT_MS = 5_000;

function isCloseEvent(value: unknown): value is { code: number; reason: string } {
  return typeof value === "object" && value !== null && "code" in value && typeof (value as { code: unknown }).code === "number";
}

/** A typed refusal (a member of a mutation's result union implementing Error), or RequestError when no answer came. */
export interface Refusal {
  __typename: string;
  code: string;
  message: string;
}

/** The member of a mutation's result union that is not a refusal (refusals have a code). */
type Success<Result> = Exclude<Result, { code: unknown }>;

/** A mutation's outcome: its success member, a typed refusal, or a failure to get an answer at all. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; refusal: Refusal };

let apis = 0;

export class Api {
  /** Tells one Api from the next (views keyed by it start afresh with a new token). */
  readonly id = ++apis;
  readonly urql: Client;
  private readonly ws: WsClient;
  private state: ConnectionState = { status: "connecting", reconnects: 0 };
  private readonly listeners = new Set<() => void>();
  private disposed = false;

  constructor(readonly token: string | null) {
    const authorization = token ? `Bearer ${token}` : undefined;
    const wsUrl = `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}/graphql`;
    let pongTimer: ReturnType<typeof setTimeout> | undefined;
    this.ws = createWsClient({
      url: wsUrl,
      lazy: false,
      connectionParams: authorization ? { authorization } : {},
      retryAttempts: Number.POSITIVE_INFINITY,
      // A wrong token stays wrong: stop and ask for another instead of retrying.
      shouldRetry: (event) => !(isCloseEvent(event) && event.code === CLOSE_UNAUTHORIZED),
      retryWait: (retries) => new Promise((resolve) => setTimeout(resolve, Math.min(300 * 2 ** retries, 5_000) * (0.75 + Math.random() / 2))),
      // Browsers hide WebSocket pings, so a socket whose network silently died
      // would look open for minutes: ping, and reconnect when no pong comes.
      keepAlive: KEEPALIVE_MS,
      onNonLazyError: (error) => {
        if (isCloseEvent(error) && error.code === CLOSE_UNAUTHORIZED) this.markUnauthorized();
        else this.setState({ status: "disconnected" });
      },
      on: {
        connecting: (isRetry) => this.setState({ status: isRetry ? "reconnecting" : "connecting" }),
        connected: (_socket, _payload, wasRetry) => {
          this.setState({ status: "connected", reconnects: this.state.reconnects + (wasRetry ? 1 : 0) });
        },
        closed: (event) => {
          clearTimeout(pongTimer);
          if (this.disposed) return;
          if (isCloseEvent(event) && event.code === CLOSE_UNAUTHORIZED) this.markUnauthorized();
          else if (this.state.status === "connected") this.setState({ status: "reconnecting" });
        },
        ping: (received) => {
          if (!received) pongTimer = setTimeout(() => this.ws.terminate(), PONG_WAIT_MS);
        },
        pong: (received) => {
          if (received) clearTimeout(pongTimer);
        },
      },
    });
    const ws = this.ws;
    this.urql = new Client({
      url: "/graphql",
      // Every query is fresh: what the console shows comes from the server, kept current by subscriptions.
      requestPolicy: "network-only",
      preferGetMethod: false,
      fetchOptions: (): RequestInit => (authorization ? { headers: { authorization } } : {}),
      exchanges: [
        fetchExchange,
        subscriptionExchange({
          forwardSubscription: (request) => ({
            subscribe: (sink) => ({ unsubscribe: ws.subscribe({ ...request, query: request.query ?? "" }, sink) }),
          }),
        }),
      ],
    });
  }

  getState(): ConnectionState {
    return this.state;
  }

  onState(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private setState(patch: Partial<ConnectionState>): void {
    if (this.disposed) return;
    // Once refused, only a new token (a new Api) changes that.
    if (this.state.status === "unauthorized") return;
    this.state = { ...this.state, ...patch };
    for (const listener of this.listeners) listener();
  }

  private markUnauthorized(): void {
    this.setState({ status: "unauthorized" });
  }

  /** Notes an HTTP 401 (the token is missing or wrong) and turns the error into words. */
  private describe(error: CombinedError): string {
    if ((error.response as { status?: number } | undefined)?.status === 401) this.markUnauthorized();
    return error.graphQLErrors.length ? error.graphQLErrors.map((e) => e.message).join("; ") : error.message;
  }

  /** A GraphQL error's code (SHUTTING_DOWN, LIMIT_EXCEEDED...), or REQUEST_FAILED for a network failure. */
  private codeOf(error: CombinedError): string {
    const code = error.graphQLErrors[0]?.extensions?.code;
    return typeof code === "string" ? code : "REQUEST_FAILED";
  }

  async query<T, V extends AnyVariables>(document: Document<T, V>, variables: NoInfer<V>): Promise<T> {
    const result = await this.urql.query<T>(document, variables).toPromise();
    if (result.error) throw new Error(this.describe(result.error));
    if (!result.data) throw new Error("the server answered without data");
    return result.data;
  }

  /**
   * Runs a mutation whose result (`field`) is a union of a success type and
   * errors implementing Error, and returns the success or the refusal as answered.
   */
  async mutate<T, V extends AnyVariables, F extends keyof T & string>(
    document: Document<T, V>,
    variables: NoInfer<V>,
    field: F,
  ): Promise<Outcome<Success<T[F]>>> {
    const result = await this.urql.mutation<Record<string, unknown>>(document, variables).toPromise();
    if (result.error) return { ok: false, refusal: { __typename: "RequestError", code: this.codeOf(result.error), message: this.describe(result.error) } };
    const value = result.data?.[field] as (Success<T[F]> & { __typename?: string; code?: unknown }) | undefined;
    if (!value) return { ok: false, refusal: { __typename: "RequestError", code: "REQUEST_FAILED", message: "the server answered without a result" } };
    if (typeof value.code === "string") return { ok: false, refusal: value as unknown as Refusal };
    return { ok: true, value };
  }

  /** Follows a subscription; returns its unsubscribe. Errors arrive in words. */
  subscribe<T, V extends AnyVariables>(
    document: Document<T, V>,
    variables: NoInfer<V>,
    handlers: { next: (data: T) => void; error?: (message: string) => void },
  ): () => void {
    const { unsubscribe } = this.urql.subscription<T>(document, variables).subscribe((result) => {
      if (result.error) handlers.error?.(this.describe(result.error));
      else if (result.data) handlers.next(result.data);
    });
    return unsubscribe;
  }

  dispose(): void {
    this.disposed = true;
    this.listeners.clear();
    void this.ws.dispose();
  }
}
