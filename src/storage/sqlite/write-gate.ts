// The writer's queue. Every write to the SQLite file (a run store transaction,
// a checkpoint or task write of LangGraph's saver) goes through one connection,
// one at a time, each in its own turn of the event loop. better-sqlite3 runs a
// statement synchronously, so a burst (twenty startRun requests at once, each a
// transaction followed by its run's first checkpoints) would otherwise run back
// to back in one turn while timers, sockets and every other run's tokens wait.

export class WriteGate {
  #tail: Promise<unknown> = Promise.resolve();
  #queued = 0;

  /** `onWait`: told how long each write waited for its turn, in ms (metrics). */
  constructor(private readonly onWait?: (ms: number) => void) {}

  /** Writes waiting for their turn now. */
  get queued(): number {
    return this.#queued;
  }

  /** Runs `work` once every write queued before it has settled. Never call run() from inside work: it would wait for itself. */
  run<T>(work: () => Promise<T> | T): Promise<T> {
    const queuedAt = performance.now();
    this.#queued++;
    const result = this.#tail.then(nextTurn).then(() => {
      this.#queued--;
      this.onWait?.(performance.now() - queuedAt);
      return work();
    });
    this.#tail = result.catch(() => {});
    return result;
  }
}

/** Resolves in a later turn of the event loop: a setImmediate queued from a callback runs in the next iteration. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
