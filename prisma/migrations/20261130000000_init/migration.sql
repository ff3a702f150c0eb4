-- CreateTable
CREATE TABLE "conversations" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "title" TEXT NOT NULL,
    "created_at" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "message_count" INTEGER NOT NULL DEFAULT 0
);

-- CreateTable
CREATE TABLE "runs" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "conversation_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL CHECK ("kind" IN ('start', 'resume')),
    "status" TEXT NOT NULL CHECK ("status" IN ('running', 'completed', 'failed', 'cancelled', 'interrupted')),
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
    CONSTRAINT "runs_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversations" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "run_owners" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "pid" INTEGER NOT NULL,
    "host" TEXT NOT NULL,
    "started_at" DATETIME NOT NULL,
    "heartbeat_at" DATETIME NOT NULL
);

-- CreateIndex
CREATE INDEX "conversations_updated_at_idx" ON "conversations"("updated_at");

-- CreateIndex
CREATE INDEX "runs_conversation_id_started_at_idx" ON "runs"("conversation_id", "started_at");

-- CreateIndex
CREATE INDEX "runs_status_owner_id_idx" ON "runs"("status", "owner_id");


-- One active run per conversation, enforced by the database so it holds across
-- processes (hand-written: Prisma's schema language has no partial indexes).
CREATE UNIQUE INDEX "runs_one_running_per_conversation" ON "runs"("conversation_id") WHERE "status" = 'running';
