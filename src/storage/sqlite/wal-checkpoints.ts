// SQLite's write-ahead log folded back into the database file from a worker
// thread. Left to SQLite, the connection that commits runs the checkpoint
// itself once the log passes 1,000 pages (wal_autocheckpoint): it copies the
// pages and fsyncs the file on the event loop, and on a busy disk that held the
// loop for hundreds of milliseconds (test/load.spec.ts saw 845 ms with the
// thread neither running nor waiting for a core). The writer's automatic
// checkpoints are turned off; a connection of the worker's own runs a PASSIVE
// checkpoint (it never waits for a lock, nor makes a reader or the writer wait)
// within a second of a write, and not at all while nothing is written: a
// checkpoint costs a few milliseconds of CPU even with nothing to fold.
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import type { SqliteDatabase } from "./database.ts";

/** How soon after a write the worker folds the log back. */
export const WAL_CHECKPOINT_MS = 1_000;

// Plain CommonJS, evaluated by the worker: it runs the same from the sources
// and from the build. The driver is required by its resolved path.
const WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma("busy_timeout = 0");
parentPort.on("message", (message) => {
  if (message === "fold") {
    try {
      db.pragma("wal_checkpoint(PASSIVE)");
    } catch {
      // Another process's checkpoint is under way, or the file is busy: the next write asks again.
    }
    return;
  }
  db.close();
  parentPort.close();
});
`;

export interface WalCheckpoints {
  /** A write was made: the log is folded back within `everyMs`. */
  wrote(): void;
  /** Stops the worker and closes its connection. */
  stop(): Promise<void>;
}

/**
 * Turns off `writer`'s automatic checkpoints and folds the log back from a
 * worker thread instead, once `everyMs` after the first write not yet folded
 * (tell it of each with wrote()). Should the worker fail, the writer's
 * automatic checkpoints come back, so the log never grows without bound.
 */
export function startWalCheckpoints(writer: SqliteDatabase, file: string, everyMs = WAL_CHECKPOINT_MS): WalCheckpoints {
  const driver = createRequire(import.meta.url).resolve("better-sqlite3");
  writer.pragma("wal_autocheckpoint = 0");
  const worker = new Worker(WORKER, { eval: true, workerData: { driver, file } });
  worker.unref();
  let stopping = false;
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  const fallBack = () => {
    if (stopping || !writer.open) return;
    writer.pragma("wal_autocheckpoint = 1000");
  };
  worker.once("error", fallBack);
  void exited.then(fallBack);
  let timer: ReturnType<typeof setTimeout> | null = null;
  return {
    wrote() {
      if (timer || stopping) return;
      timer = setTimeout(() => {
        timer = null;
        worker.postMessage("fold");
      }, everyMs);
      timer.unref();
    },
    async stop() {
      if (stopping) return exited;
      stopping = true;
      if (timer) clearTimeout(timer);
      // Held until it has closed its connection: unreferenced, it would let the process end first.
      worker.ref();
      worker.postMessage("close");
      await exited;
    },
  };
}
