-- What a run streamed that its checkpoints do not keep, so it can be shown
-- after the run's event log is gone: each custom event, and the first token of
-- each message (the graph node it came from). The kind's CHECK is written by hand.

-- CreateTable
CREATE TABLE "run_events" (
    "run_id" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "kind" TEXT NOT NULL CHECK ("kind" IN ('custom', 'message')),
    "name" TEXT,
    "data" TEXT,
    "message_id" TEXT,
    "node" TEXT,
    "at" DATETIME NOT NULL,

    PRIMARY KEY ("run_id", "seq"),
    CONSTRAINT "run_events_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "runs" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
