// A value that changes over time, read the way React's useSyncExternalStore
// reads a store: getSnapshot() returns the current (immutable) value, the same
// object until it changes, and subscribe() calls the listener after each change.

export interface Readable<T> {
  /** The current value; the same object until it changes. */
  getSnapshot(): T;
  /** Calls `listener` after each change; returns the function that stops it. */
  subscribe(listener: () => void): () => void;
}

export class Value<T> implements Readable<T> {
  #value: T;
  readonly #listeners = new Set<() => void>();

  constructor(value: T) {
    this.#value = value;
  }

  getSnapshot = (): T => this.#value;

  subscribe = (listener: () => void): (() => void) => {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  };

  /** Replaces the value and tells every listener, unless it is the same object. */
  set(value: T): void {
    if (Object.is(value, this.#value)) return;
    this.#value = value;
    for (const listener of [...this.#listeners]) listener();
  }
}
