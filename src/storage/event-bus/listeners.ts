// Plain callbacks a bus calls for each message of a kind (cancel requests,
// conversation changes), beside its subscribers: a listener has no queue to
// overflow and is not counted in stats(), so the instance's own machinery
// (the executor's cancels and queue looks) can follow a bus for its lifetime.

export class Listeners<T> {
  readonly #entries = new Set<(value: T) => void>();

  /** Adds `listener`; answers its removal. A fresh entry each time, so adding one listener twice needs two removals, as any subscription. */
  add(listener: (value: T) => void): () => void {
    const entry = (value: T) => listener(value);
    this.#entries.add(entry);
    return () => this.#entries.delete(entry);
  }

  /** Calls every listener (one may remove itself meanwhile); one that throws does not keep `value` from the others: the first failure is thrown after. */
  call(value: T): void {
    let failure: { error: unknown } | null = null;
    for (const listener of [...this.#entries]) {
      try {
        listener(value);
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure) throw failure.error;
  }

  clear(): void {
    this.#entries.clear();
  }
}
