-- Schedules: cron expressions that start runs (docs/schedules.md), and one row
-- per firing claimed, keyed by its nominal time, so a firing is claimed once
-- across instances. A conversation's deletion deletes its schedules; a
-- schedule's deletion its firings. The CHECKs are written by hand.

-- CreateTable
CREATE TABLE "schedules" (
    "id" TEXT COLLATE "C" NOT NULL,
    "agent" TEXT NOT NULL,
    "cron" TEXT NOT NULL,
    "timezone" TEXT NOT NULL,
    "message" TEXT NOT NULL,
    "conversation_id" TEXT COLLATE "C",
    "owner" TEXT NOT NULL,
    "owner_role" TEXT NOT NULL CHECK ("owner_role" IN ('user', 'admin')),
    "paused" BOOLEAN NOT NULL DEFAULT false,
    "missed_policy" TEXT NOT NULL CHECK ("missed_policy" IN ('SKIP', 'RUN_ONCE')),
    "next_run_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "schedules_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "schedule_firings" (
    "schedule_id" TEXT COLLATE "C" NOT NULL,
    "fire_at" TIMESTAMPTZ(3) NOT NULL,
    "run_id" TEXT COLLATE "C",
    "error" TEXT,
    "claimed_at" TIMESTAMPTZ(3) NOT NULL,
    "claimed_by" TEXT NOT NULL,

    CONSTRAINT "schedule_firings_pkey" PRIMARY KEY ("schedule_id","fire_at")
);

-- CreateIndex
CREATE INDEX "schedules_owner_created_at_id_idx" ON "schedules"("owner", "created_at", "id");

-- CreateIndex
CREATE INDEX "schedules_created_at_id_idx" ON "schedules"("created_at", "id");

-- CreateIndex
CREATE INDEX "schedules_paused_next_run_at_idx" ON "schedules"("paused", "next_run_at");

-- CreateIndex
CREATE INDEX "schedules_conversation_id_idx" ON "schedules"("conversation_id");

-- CreateIndex
CREATE INDEX "schedule_firings_run_id_idx" ON "schedule_firings"("run_id");

-- AddForeignKey
ALTER TABLE "schedules" ADD CONSTRAINT "schedules_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "schedule_firings" ADD CONSTRAINT "schedule_firings_schedule_id_fkey" FOREIGN KEY ("schedule_id") REFERENCES "schedules"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "schedule_firings" ADD CONSTRAINT "schedule_firings_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "runs"("id") ON DELETE SET NULL ON UPDATE CASCADE;
