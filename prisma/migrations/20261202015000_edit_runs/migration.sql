-- Edits: a run of kind 'edit' records a change to a thread's state
-- (editState: LangGraph's updateState), with what it wrote in "edit" (JSON:
-- {values, asNode}); the checkpoint it edited is its start_checkpoint_id.
-- SQLite cannot change a CHECK constraint in place, so `runs` is rebuilt with
-- the same rows (migrations run with foreign keys off, so the interrupts and
-- tool calls that refer to runs stay).

-- RedefineTable
CREATE TABLE "new_runs" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "conversation_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL CHECK ("kind" IN ('start', 'resume', 'edit')),
    "status" TEXT NOT NULL CHECK ("status" IN ('queued', 'running', 'completed', 'failed', 'cancelled', 'interrupted', 'waiting')),
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
    "started_by" TEXT,
    "started_by_role" TEXT CHECK ("started_by_role" IN ('user', 'admin')),
    "endpoint" TEXT,
    "queued_at" DATETIME,
    "queue_reason" TEXT CHECK ("queue_reason" IN ('MODEL_BUSY', 'INSTANCE_FULL', 'BEHIND_ACTIVE_RUN')),
    "edit" TEXT,
    CONSTRAINT "runs_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversations" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_runs" ("id", "conversation_id", "kind", "status", "input", "error_code", "error_message", "partial_output", "started_at", "finished_at", "start_mark", "end_mark", "last_event_seq", "owner_id", "start_checkpoint_id", "input_tokens", "output_tokens", "model_calls", "time_to_first_token_ms", "model_duration_ms", "started_by", "started_by_role", "endpoint", "queued_at", "queue_reason")
  SELECT "id", "conversation_id", "kind", "status", "input", "error_code", "error_message", "partial_output", "started_at", "finished_at", "start_mark", "end_mark", "last_event_seq", "owner_id", "start_checkpoint_id", "input_tokens", "output_tokens", "model_calls", "time_to_first_token_ms", "model_duration_ms", "started_by", "started_by_role", "endpoint", "queued_at", "queue_reason" FROM "runs";
DROP TABLE "runs";
ALTER TABLE "new_runs" RENAME TO "runs";
CREATE INDEX "runs_conversation_id_started_at_idx" ON "runs"("conversation_id", "started_at");
CREATE INDEX "runs_status_owner_id_idx" ON "runs"("status", "owner_id");
CREATE INDEX "runs_started_by_started_at_idx" ON "runs"("started_by", "started_at");
-- One active (queued or running) run per conversation, enforced by the database (hand-written: Prisma has no partial indexes).
CREATE UNIQUE INDEX "runs_one_active_per_conversation" ON "runs"("conversation_id") WHERE "status" IN ('queued', 'running');
-- The queue in claim order, and the running runs per model endpoint.
CREATE INDEX "runs_queue_idx" ON "runs"("queued_at", "id") WHERE "status" = 'queued';
CREATE INDEX "runs_running_endpoint_idx" ON "runs"("endpoint") WHERE "status" = 'running';
