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
  /** Live streams that ended without being asked to and wait to be subscribed again: until then the page is not fully live. */
  resubscribing: number;
}

/** A live stream's handlers (Api.live). */
export interface LiveHandlers<T> {
  next: (data: T) => void;
  /**
   * The stream ended without being asked to: the server completed it (a
   * graceful shutdown does) or refused it (`error` is its reason, in words).
   * `failures` counts the ends in a row with no data between them. Return
   * false when the end was expected (a run's stream after its terminal event)
   * or is final; otherwise it is subscribed again, with its variables read afresh.
   */
  ended?: (error: string | null, failures: number) => boolean;
  /** Subscribed again after an end: whatever was sent meanwhile was missed, so a view reads its snapshot again. */
  restarted?: () => void;
}

/** How long a stream that ended waits before it is subscribed again: quick at first, slower if it keeps ending. */
function restartDelay(failures: number): number {
  return Math.min(250 * 2 ** failures, 5_000);
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

/** A stream's refusal in words: graphql-ws hands over GraphQL errors, an Error, or a close event. */
function describeStreamError(error: unknown): string {
  if (Array.isArray(error)) return error.map((e: { message?: unknown }) => String(e?.message ?? e)).join("; ");
  if (isCloseEvent(error)) return `the connection closed (${error.code}${error.reason ? ` ${error.reason}` : ""})`;
  return error instanceof Error ? error.message : String(error);
}

export class Api {
  /** Tells one Api from the next (views keyed by it start afresh with a new token). */
  readonly id = ++apis;
  readonly urql: Client;
  private readonly ws: WsClient;
  private state: ConnectionState = { status: "connecting", reconnects: 0, resubscribing: 0 };
  private readonly listeners = new Set<() => void>();
  /** Every live stream: each one is subscribed again, with fresh variables, when the socket reconnects. */
  private readonly streams = new Set<{ reconnected: () => void }>();
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
          // Before graphql-ws sends its subscriptions again with the variables they began with:
          // each stream starts over with its own (a run's `after` is the last seq seen).
          if (wasRetry) for (const stream of [...this.streams]) stream.reconnected();
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

  /** A plain HTTP GET beside GraphQL (an export), with the credential; throws the refusal in words. */
  async fetchText(path: string): Promise<{ text: string; contentType: string }> {
    const response = await fetch(path, this.token ? { headers: { authorization: `Bearer ${this.token}` } } : {});
    const text = await response.text();
    if (response.status === 401) this.markUnauthorized();
    if (!response.ok) {
      let message = text;
      try {
        message = (JSON.parse(text) as { message?: string }).message ?? text;
      } catch {
        // not JSON: the body as it is
      }
      throw new Error(`${response.status} ${message}`);
    }
    return { text, contentType: response.headers.get("content-type") ?? "text/plain" };
  }

  /** Follows a subscription until it ends, however it ends; returns its unsubscribe. Errors arrive in words. Views that must stay live use live(). */
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

  /**
   * Follows a subscription that must not end silently: any end the caller did
   * not ask for (the server completed it, refused it, or went away) subscribes
   * it again, with `variables()` read at that moment, unless `ended` says the
   * end was expected. Returns its unsubscribe, the only end that is final.
   */
  live<T, V extends AnyVariables>(document: Document<T, V>, variables: () => NoInfer<V>, handlers: LiveHandlers<T>): () => void {
    let stopped = false;
    let failures = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let current: { unsubscribe: () => void; over: boolean } | null = null;
    const waiting = (delta: number) => this.setState({ resubscribing: this.state.resubscribing + delta });
    const start = () => {
      const run = { unsubscribe: () => {}, over: false };
      current = run;
      let lastError: string | null = null;
      const finish = (error: string | null) => {
        if (run.over || stopped) return;
        run.over = true;
        if (handlers.ended?.(error ?? lastError, failures + 1) === false) {
          stop();
          return;
        }
        waiting(1);
        timer = setTimeout(() => {
          timer = undefined;
          waiting(-1);
          if (stopped) return;
          start();
          handlers.restarted?.();
        }, restartDelay(failures++));
      };
      run.unsubscribe = this.ws.subscribe<T>(
        { query: document, variables: variables() as Record<string, unknown> },
        {
          next: (result) => {
            if (run.over || stopped) return;
            // An error result is the stream's last (a refusal, or a slow subscriber cut off): its words go with the end.
            if (result.errors?.length) lastError = result.errors.map((e) => e.message).join("; ");
            if (result.data) {
              failures = 0;
              handlers.next(result.data);
            }
          },
          error: (error) => finish(describeStreamError(error)),
          complete: () => finish(null),
        },
      );
    };
    const stream = {
      reconnected: () => {
        if (stopped || !current || current.over) return;
        current.over = true;
        current.unsubscribe();
        start();
      },
    };
    const stop = () => {
      if (stopped) return;
      stopped = true;
      this.streams.delete(stream);
      if (timer !== undefined) {
        clearTimeout(timer);
        waiting(-1);
      }
      if (current && !current.over) {
        current.over = true;
        current.unsubscribe();
      }
    };
    this.streams.add(stream);
    start();
    return stop;
  }

  dispose(): void {
    this.disposed = true;
    this.listeners.clear();
    void this.ws.dispose();
  }
}
