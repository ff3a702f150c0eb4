// The device's network and the page's visibility as a browser reports them
// (navigator.onLine, the online/offline and visibilitychange events). Where
// there is no browser (Node, a worker without them) the network is always up.

interface EventTargetLike {
  addEventListener(type: string, listener: () => void): void;
  removeEventListener(type: string, listener: () => void): void;
}

export interface NetworkWatch {
  /** False while the device reports no network. */
  online(): boolean;
  stop(): void;
}

/** Calls `changed` when the network goes or comes back, and `woke` when a hidden page is shown again (a tab woken from sleep). */
export function watchNetwork(changed: (online: boolean) => void, woke: () => void = () => {}): NetworkWatch {
  const target = globalThis as unknown as Partial<EventTargetLike> & { navigator?: { onLine?: boolean }; document?: { visibilityState?: string } };
  const online = () => target.navigator?.onLine !== false;
  if (typeof target.addEventListener !== "function" || typeof target.removeEventListener !== "function") return { online, stop: () => {} };
  const events = target as EventTargetLike;
  const up = () => changed(true);
  const down = () => changed(false);
  const visible = () => {
    if (target.document?.visibilityState === "visible") woke();
  };
  events.addEventListener("online", up);
  events.addEventListener("offline", down);
  (target.document as unknown as Partial<EventTargetLike> | undefined)?.addEventListener?.("visibilitychange", visible);
  return {
    online,
    stop: () => {
      events.removeEventListener("online", up);
      events.removeEventListener("offline", down);
      (target.document as unknown as Partial<EventTargetLike> | undefined)?.removeEventListener?.("visibilitychange", visible);
    },
  };
}

/** A wait that `wake()` cuts short: a backoff that ends at once when the network comes back. */
export class Alarm {
  #wake: (() => void) | null = null;

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(timer);
        if (self.#wake === done) self.#wake = null;
        resolve();
      }
      this.#wake?.();
      this.#wake = done;
    });
  }

  wake(): void {
    this.#wake?.();
  }
}

/** 250 ms, 500 ms, 1 s... up to `maxMs`, each with ±25% jitter so that many clients do not come back at once. */
export function backoff(attempt: number, maxMs = 10_000): number {
  const base = Math.min(250 * 2 ** attempt, maxMs);
  return Math.round(base * (0.75 + Math.random() / 2));
}
