-- Agents, human-in-the-loop, forks and usage. SQLite cannot change a CHECK
-- constraint in place, so `runs` is rebuilt (same rows) to allow the status
-- 'waiting' and to hold each run's starting checkpoint and usage.

-- AlterTable
ALTER TABLE "conversations" ADD COLUMN "agent" TEXT NOT NULL DEFAULT 'default';
ALTER TABLE "conversations" ADD COLUMN "forked_from_conversation_id" TEXT REFERENCES "conversations" ("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "conversations" ADD COLUMN "forked_from_checkpoint_id" TEXT;

-- RedefineTable
CREATE TABLE "new_runs" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "conversation_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL CHECK ("kind" IN ('start', 'resume')),
    "status" TEXT NOT NULL CHECK ("status" IN ('running', 'completed', 'failed', 'cancelled', 'interrupted', 'waiting')),
    "input" TEXT,
    "error_code" TEXT CHECK ("error_code" IN ('MODEL_UNAVAILABLE', 'MODEL_NOT_FOUND', 'MODEL_TIMEOUT', 'MODEL_ERROR', 'RECURSION_LIMIT', 'CANCELLED', 'INTERRUPTED', 'AGENT_FAILURE')),
    "error_message" TEXT,
    "partial_output" TEXT,
    "started_at" DATETIME NOT NULL,
    "finished_at" DATETIME,
    "start_mark" TEXT NOT NULL,
    "end_mark" TEXT,
    "last_event_seq" INTEGER NOT NULL DEFAULT 0,
    "owner_id" TEXT,
    "start_checkpoint_id" TEXT,
    "input_tokens" INTEGER,
    "output_tokens" INTEGER,
    "model_calls" INTEGER,
    "time_to_first_token_ms" INTEGER,
    "model_duration_ms" INTEGER,
    CONSTRAINT "runs_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversations" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_runs" ("id", "conversation_id", "kind", "status", "input", "error_code", "error_message", "partial_output", "started_at", "finished_at", "start_mark", "end_mark", "last_event_seq", "owner_id")
  SELECT "id", "conversation_id", "kind", "status", "input", "error_code", "error_message", "partial_output", "started_at", "finished_at", "start_mark", "end_mark", "last_event_seq", "owner_id" FROM "runs";
DROP TABLE "runs";
ALTER TABLE "new_runs" RENAME TO "runs";
CREATE INDEX "runs_conversation_id_started_at_idx" ON "runs"("conversation_id", "started_at");
CREATE INDEX "runs_status_owner_id_idx" ON "runs"("status", "owner_id");
-- One active run per conversation, enforced by the database (hand-written: Prisma has no partial indexes).
CREATE UNIQUE INDEX "runs_one_running_per_conversation" ON "runs"("conversation_id") WHERE "status" = 'running';

-- CreateTable
CREATE TABLE "interrupts" (
    "run_id" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "conversation_id" TEXT NOT NULL,
    "node" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "created_at" DATETIME NOT NULL,
    "answered_by_run_id" TEXT,
    "answer" TEXT,
    "answered_at" DATETIME,

    PRIMARY KEY ("run_id", "id"),
    CONSTRAINT "interrupts_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "runs" ("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "interrupts_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversations" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX "interrupts_conversation_id_idx" ON "interrupts"("conversation_id");
