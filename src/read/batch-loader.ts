// Collects the keys asked for while one round of resolvers runs and loads them
// with a single call, so a list of N parents costs one query, not N. Each key's
// promise is kept for the life of the loader (one GraphQL execution).

export class BatchLoader<V> {
  readonly #cache = new Map<string, Promise<V>>();
  #queue: { key: string; resolve: (value: V) => void; reject: (error: unknown) => void }[] = [];

  constructor(
    private readonly loadMany: (keys: string[]) => Promise<Map<string, V>>,
    /** The value for a key the batch did not return. */
    private readonly missing: (key: string) => V,
  ) {}

  load(key: string): Promise<V> {
    const cached = this.#cache.get(key);
    if (cached) return cached;
    const promise = new Promise<V>((resolve, reject) => {
      if (this.#queue.length === 0) {
        // After the current promise jobs, so every resolver of this round has asked.
        void Promise.resolve().then(() => process.nextTick(() => this.#dispatch()));
      }
      this.#queue.push({ key, resolve, reject });
    });
    this.#cache.set(key, promise);
    return promise;
  }

  #dispatch(): void {
    const batch = this.#queue;
    this.#queue = [];
    this.loadMany([...new Set(batch.map((b) => b.key))]).then(
      (values) => {
        for (const { key, resolve } of batch) resolve(values.has(key) ? values.get(key)! : this.missing(key));
      },
      (error) => {
        for (const { key, reject } of batch) {
          this.#cache.delete(key);
          reject(error);
        }
      },
    );
  }
}
