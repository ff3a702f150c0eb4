-- The run queue: a run waits as 'queued' (its queue time, why it waits, the
-- model endpoint it needs and its starter's role kept on the row) until an
-- instance with room for it and its model claims it (FOR UPDATE SKIP LOCKED).
-- One active run per conversation now counts queued runs too.

-- AlterTable
ALTER TABLE "runs" DROP CONSTRAINT "runs_status_check";
ALTER TABLE "runs" ADD CONSTRAINT "runs_status_check" CHECK ("status" IN ('queued', 'running', 'completed', 'failed', 'cancelled', 'interrupted', 'waiting'));
ALTER TABLE "runs" ADD COLUMN "started_by_role" TEXT CHECK ("started_by_role" IN ('user', 'admin')),
ADD COLUMN "endpoint" TEXT COLLATE "C",
ADD COLUMN "queued_at" TIMESTAMPTZ(3),
ADD COLUMN "queue_reason" TEXT CHECK ("queue_reason" IN ('MODEL_BUSY', 'INSTANCE_FULL', 'BEHIND_ACTIVE_RUN'));

-- One active (queued or running) run per conversation, enforced by the database (hand-written: Prisma has no partial indexes).
DROP INDEX "runs_one_running_per_conversation";
CREATE UNIQUE INDEX "runs_one_active_per_conversation" ON "runs"("conversation_id") WHERE "status" IN ('queued', 'running');
-- The queue in claim order, and the running runs per model endpoint.
CREATE INDEX "runs_queue_idx" ON "runs"("queued_at", "id") WHERE "status" = 'queued';
CREATE INDEX "runs_running_endpoint_idx" ON "runs"("endpoint") WHERE "status" = 'running';
