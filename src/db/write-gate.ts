// One writer at a time among this process's SQLite connections.
//
// The run store (Prisma) and the checkpointer (SqliteSaver) write the same file
// through different connections of one SQLite library. A Prisma transaction
// holds the file's write lock across awaits; if another connection of this
// process tries to write meanwhile, better-sqlite3 waits for the lock
// synchronously, so the event loop that would commit the transaction is blocked:
// the process freezes for the busy timeout and the write fails with SQLITE_BUSY.
// Every write in the process therefore passes through this gate. Other processes
// are not affected: their waits do not block this event loop.

export class WriteGate {
  #tail: Promise<unknown> = Promise.resolve();

  /** Runs `work` once every write queued before it has settled. Never call run() from inside work: it would wait for itself. */
  run<T>(work: () => Promise<T> | T): Promise<T> {
    const result = this.#tail.then(work);
    this.#tail = result.catch(() => {});
    return result;
  }
}

