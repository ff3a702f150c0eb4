// The writer's queue. Every write to the SQLite file (a run store transaction,
// a checkpoint or task write of LangGraph's saver) goes through one connection,
// one at a time, each in its own turn on the event loop (src/turns.ts). better-sqlite3 runs a
// statement synchronously, so a burst (twenty startRun requests at once, each a
// transaction followed by its run's first checkpoints) would otherwise run back
// to back in one turn while timers, sockets and every other run's tokens wait.
//
// Another process sharing the file may hold its write lock. SQLite's busy
// timeout would wait for it inside the statement, holding this process's only
// thread (two instances on one file, 1,000 starts: one slept there 372 times,
// 0.67 s in all). The writer connection has no busy timeout instead: a write
// refused with SQLITE_BUSY is tried again here after SQLite's own delays,
// while the event loop serves everything else, until BUSY_TIMEOUT_MS has
// passed. So a write must be safe to try again after SQLITE_BUSY: one
// transaction, or one statement (and reads after it).
import { BUSY_TIMEOUT_MS } from "./database.ts";
import { turns } from "../../turns.ts";

/** The waits between tries for another connection's lock: those of SQLite's own busy handler, in ms. */
const BUSY_DELAYS_MS = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100];

export class WriteGate {
  #tail: Promise<unknown> = Promise.resolve();
  #queued = 0;

  /**
   * `onWait`: told how long each write waited for its turn, in ms (metrics).
   * `busyTimeoutMs`: how long a write refused with SQLITE_BUSY is tried again before the error is the caller's.
   */
  constructor(
    private readonly onWait?: (ms: number) => void,
    private readonly busyTimeoutMs = BUSY_TIMEOUT_MS,
  ) {}

  /** Writes waiting for their turn now. */
  get queued(): number {
    return this.#queued;
  }

  /** Runs `work` once every write queued before it has settled. Never call run() from inside work: it would wait for itself. */
  run<T>(work: () => Promise<T> | T): Promise<T> {
    const queuedAt = performance.now();
    this.#queued++;
    const result = this.#tail
      .then(() => turns.turn())
      .then(() => {
        this.#queued--;
        this.onWait?.(performance.now() - queuedAt);
        return this.#untilFree(work);
      });
    this.#tail = result.catch(() => {});
    return result;
  }

  async #untilFree<T>(work: () => Promise<T> | T): Promise<T> {
    const started = performance.now();
    for (let attempt = 0; ; attempt++) {
      try {
        return await work();
      } catch (error) {
        const waited = performance.now() - started;
        if (!isBusy(error) || waited >= this.busyTimeoutMs) throw error;
        const delay = BUSY_DELAYS_MS[Math.min(attempt, BUSY_DELAYS_MS.length - 1)]!;
        await new Promise((resolve) => setTimeout(resolve, Math.min(delay, this.busyTimeoutMs - waited)));
      }
    }
  }
}

/** SQLITE_BUSY and its extended codes: another connection holds the lock; nothing was written. */
function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && code.startsWith("SQLITE_BUSY");
}
