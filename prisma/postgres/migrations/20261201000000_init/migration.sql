-- CreateTable
-- Ids and marks compare byte by byte (COLLATE "C"), as in SQLite: marks are
-- compared with LangGraph's checkpoint ids, and pages order by id.
CREATE TABLE "conversations" (
    "id" TEXT COLLATE "C" NOT NULL,
    "title" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "message_count" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "conversations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "runs" (
    "id" TEXT COLLATE "C" NOT NULL,
    "conversation_id" TEXT COLLATE "C" NOT NULL,
    "kind" TEXT NOT NULL CHECK ("kind" IN ('start', 'resume')),
    "status" TEXT NOT NULL CHECK ("status" IN ('running', 'completed', 'failed', 'cancelled', 'interrupted')),
    "input" TEXT,
    "error_code" TEXT CHECK ("error_code" IN ('MODEL_UNAVAILABLE', 'MODEL_NOT_FOUND', 'MODEL_TIMEOUT', 'MODEL_ERROR', 'RECURSION_LIMIT', 'CANCELLED', 'INTERRUPTED', 'AGENT_FAILURE')),
    "error_message" TEXT,
    "partial_output" TEXT,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "finished_at" TIMESTAMPTZ(3),
    "start_mark" TEXT COLLATE "C" NOT NULL,
    "end_mark" TEXT COLLATE "C",
    "last_event_seq" INTEGER NOT NULL DEFAULT 0,
    "owner_id" TEXT,

    CONSTRAINT "runs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "run_owners" (
    "id" TEXT NOT NULL,
    "pid" INTEGER NOT NULL,
    "host" TEXT NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "heartbeat_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "run_owners_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "conversations_updated_at_id_idx" ON "conversations"("updated_at", "id");

-- CreateIndex
CREATE INDEX "runs_conversation_id_started_at_idx" ON "runs"("conversation_id", "started_at");

-- CreateIndex
CREATE INDEX "runs_status_owner_id_idx" ON "runs"("status", "owner_id");

-- AddForeignKey
ALTER TABLE "runs" ADD CONSTRAINT "runs_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- One active run per conversation, enforced by the database so it holds across
-- instances (hand-written: Prisma's schema language has no partial indexes).
CREATE UNIQUE INDEX "runs_one_running_per_conversation" ON "runs"("conversation_id") WHERE "status" = 'running';
