// How many live streams one principal may hold open on this instance: its
// WebSocket operations and its SSE responses together. Each stream holds a
// subscriber queue and a socket, so without a cap one user could hold enough of
// them to crowd out the others. Admins are held to it only with QUOTA_ADMINS, as
// to the quotas.
import type { Principal } from "../../domain/principal.ts";

/** What a socket counts: graphql-ws keeps each open operation's id in `subscriptions`. */
export interface CountedSocket {
  subscriptions: Record<string, unknown>;
}

export class StreamCapExceededError extends Error {
  readonly code = "QUOTA_EXCEEDED" as const;
  constructor(readonly limit: number) {
    super(`you already have ${limit} live streams open (QUOTA_STREAMS); close one first`);
    this.name = "StreamCapExceededError";
  }

  /** As a QuotaExceededError reads: the quota named by its variable, and how many streams it allows. */
  extensions(): { code: "QUOTA_EXCEEDED"; limit: "QUOTA_STREAMS"; streams: number } {
    return { code: this.code, limit: "QUOTA_STREAMS", streams: this.limit };
  }
}

export class StreamCap {
  readonly #sse = new Map<string, number>();
  readonly #sockets = new Map<string, Set<CountedSocket>>();

  /**
   * @param limit `QUOTA_STREAMS`; 0: no cap.
   * @param capsAdmins `QUOTA_ADMINS`: admins are held to the cap too.
   */
  constructor(
    readonly limit: number,
    private readonly capsAdmins: boolean,
  ) {}

  #capped(principal: Principal): boolean {
    return this.limit > 0 && principal.id !== "" && (principal.role !== "admin" || this.capsAdmins);
  }

  /** The principal's open streams on this instance. */
  count(principal: Principal): number {
    let open = this.#sse.get(principal.id) ?? 0;
    for (const socket of this.#sockets.get(principal.id) ?? []) open += Object.keys(socket.subscriptions).length;
    return open;
  }

  /** An SSE stream opens: answers its release, or throws StreamCapExceededError when the principal holds the limit already. */
  openSse(principal: Principal): () => void {
    if (!this.#capped(principal)) return () => {};
    if (this.count(principal) >= this.limit) throw new StreamCapExceededError(this.limit);
    const id = principal.id;
    this.#sse.set(id, (this.#sse.get(id) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#sse.get(id) ?? 1) - 1;
      if (left > 0) this.#sse.set(id, left);
      else this.#sse.delete(id);
    };
  }

  /** A WebSocket opened by the principal: its operations count from now until the returned function is called. */
  addSocket(principal: Principal, socket: CountedSocket): () => void {
    if (!this.#capped(principal)) return () => {};
    const id = principal.id;
    let sockets = this.#sockets.get(id);
    if (!sockets) this.#sockets.set(id, (sockets = new Set()));
    sockets.add(socket);
    return () => {
      sockets.delete(socket);
      if (sockets.size === 0 && this.#sockets.get(id) === sockets) this.#sockets.delete(id);
    };
  }

  /** Throws StreamCapExceededError when a socket's new operation, already in its `subscriptions`, goes past the limit. */
  checkSocketOperation(principal: Principal): void {
    if (this.#capped(principal) && this.count(principal) > this.limit) throw new StreamCapExceededError(this.limit);
  }
}
