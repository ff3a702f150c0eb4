-- The journal of tool calls: one row per attempt, written before the tool is
-- invoked and again with its outcome, so a call cut off by a crash is known to
-- be in doubt. The state's CHECK is written by hand.

-- CreateTable
CREATE TABLE "tool_calls" (
    "conversation_id" TEXT NOT NULL,
    "tool_call_id" TEXT NOT NULL,
    "attempt" INTEGER NOT NULL,
    "run_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "args" TEXT NOT NULL,
    "state" TEXT NOT NULL CHECK ("state" IN ('started', 'succeeded', 'failed', 'in_doubt', 'skipped')),
    "result" TEXT,
    "started_at" DATETIME NOT NULL,
    "finished_at" DATETIME,

    PRIMARY KEY ("conversation_id", "tool_call_id", "attempt"),
    CONSTRAINT "tool_calls_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversations" ("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "tool_calls_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "runs" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE INDEX "tool_calls_run_id_idx" ON "tool_calls"("run_id");
