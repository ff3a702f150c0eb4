// A subscription that must not end silently. Any end its owner did not ask for
// (the server completed it, refused it, cut it off as too slow, or its
// connection dropped) subscribes it again, with its variables read at that
// moment, unless the owner says the end was expected.
import type { Document } from "./documents.js";
import { backoff } from "./network.js";
import { TransportError, type Transport } from "./transport.js";

/** Why a stream ended: the server's words, and whether its connection dropped (then nothing is wrong with the stream itself). */
export interface StreamEnd {
  message: string | null;
  /** The connection carrying it dropped. */
  connectionLost: boolean;
  /** A GraphQL error code the server gave (NOT_FOUND, SUBSCRIBER_TOO_SLOW...), if any. */
  code: string | null;
}

export interface StreamHandlers<T> {
  next(data: T): void;
  /**
   * The stream ended without being asked to. `failures` counts the ends in a
   * row with no data between them. Return false when the end was expected (a
   * run's stream after its terminal event) or is final; otherwise it is
   * subscribed again, with `variables()` read afresh.
   */
  ended(end: StreamEnd, failures: number): boolean;
  /**
   * Subscribed again after an end, or first subscribed while the connection was
   * not up; told once connected. Whatever was sent before the subscription was
   * live was missed: read it again now.
   */
  restarted?(): void;
}

function describe(error: unknown): { message: string; code: string | null } {
  if (Array.isArray(error)) {
    const first = error[0] as { message?: unknown; extensions?: { code?: unknown } } | undefined;
    const code = typeof first?.extensions?.code === "string" ? first.extensions.code : null;
    return { message: error.map((e: { message?: unknown }) => String(e?.message ?? e)).join("; "), code };
  }
  return { message: error instanceof Error ? error.message : String(error), code: null };
}

/** Follows `document` until the returned function is called or `ended` returns false. */
export function keepSubscribed<T, V extends Record<string, unknown>>(
  transport: Transport,
  document: Document<T, V>,
  variables: () => V,
  handlers: StreamHandlers<T>,
): () => void {
  let stopped = false;
  let failures = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let unsubscribe = () => {};
  let unwatch = () => {};

  /**
   * Tells the owner that what was sent meanwhile was missed, once the new
   * subscription can be live: at once when connected, else when the
   * connection is back (a read made while it is down would miss what happens
   * between that read and the reconnection).
   */
  const restarted = () => {
    if (!handlers.restarted) return;
    const connection = transport.connection;
    const tell = () => setTimeout(() => !stopped && handlers.restarted?.(), 0);
    if (connection.getSnapshot().status === "connected") return void tell();
    unwatch();
    const off = connection.subscribe(() => {
      if (connection.getSnapshot().status !== "connected") return;
      off();
      unwatch = () => {};
      tell();
    });
    unwatch = off;
  };

  const start = () => {
    let over = false;
    let lastError: { message: string; code: string | null } | null = null;
    const finish = (end: StreamEnd) => {
      if (over || stopped) return;
      over = true;
      if (!handlers.ended(end, failures + 1)) {
        stopped = true;
        return;
      }
      // A dropped connection is no failure of the stream: the transport holds the new subscription until it is back.
      const delay = end.connectionLost ? 0 : backoff(failures++, 5_000);
      timer = setTimeout(() => {
        timer = undefined;
        if (stopped) return;
        start();
        restarted();
      }, delay);
    };
    unsubscribe = transport.subscribe<T>(
      { query: document, variables: variables() },
      {
        next: (result) => {
          if (over || stopped) return;
          // An error result is a stream's last (a refusal, or a slow subscriber cut off): its words go with the end.
          if (result.errors?.length) lastError = describe(result.errors);
          if (result.data) {
            failures = 0;
            handlers.next(result.data);
          }
        },
        error: (error) => {
          const connectionLost = error instanceof TransportError && error.kind === "closed";
          finish({ ...describe(error), connectionLost });
        },
        complete: () => finish({ message: lastError?.message ?? null, code: lastError?.code ?? null, connectionLost: false }),
      },
    );
  };

  start();
  // Subscribed while the connection is down (a store made during a reconnection, or before the first):
  // the owner's first read may come back before the subscription is live, so it reads again once it is.
  if (transport.connection.getSnapshot().status !== "connected") restarted();
  return () => {
    if (stopped) return;
    stopped = true;
    clearTimeout(timer);
    unwatch();
    unsubscribe();
  };
}
