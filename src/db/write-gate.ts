// One writer at a time among this process's SQLite connections, each write in
// its own turn of the event loop.
//
// The run store and the checkpointer (SqliteSaver) write the same file through
// different connections of one SQLite library. SqliteRunStore's transactions are
// synchronous, but PrismaRunStore's hold the file's write lock across awaits; if
// another connection of this process tries to write meanwhile, better-sqlite3
// waits for the lock synchronously, so the event loop that would commit the
// transaction is blocked: the process freezes for the busy timeout and the write
// fails with SQLITE_BUSY. Prisma 6.19 runs a transaction within one turn of the
// event loop, so only code woken inside that turn could collide with it; passing
// every write of the process through this gate makes the collision impossible
// rather than unlikely, whichever store is in use. Other processes are not
// affected: their waits do not block this event loop.
//
// Each write also starts in a fresh turn of the event loop. A burst (twenty
// startRun requests at once, each a transaction followed by the run's first
// checkpoints) would otherwise run back to back in one turn, and timers, sockets
// and every other run would wait for all of it.

export class WriteGate {
  #tail: Promise<unknown> = Promise.resolve();

  /** Runs `work` once every write queued before it has settled. Never call run() from inside work: it would wait for itself. */
  run<T>(work: () => Promise<T> | T): Promise<T> {
    const result = this.#tail.then(nextTurn).then(work);
    this.#tail = result.catch(() => {});
    return result;
  }
}

/** Resolves in a later turn of the event loop: a setImmediate queued from a callback runs in the next iteration. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
