-- Multitask ENQUEUE: a run may wait queued behind its conversation's active run
-- (queue_reason 'BEHIND_ACTIVE_RUN'). Such runs are not the conversation's
-- active run: the one-active-run index leaves them out, and a claim promotes the
-- oldest of them once the conversation has no other active run.
DROP INDEX "runs_one_active_per_conversation";
CREATE UNIQUE INDEX "runs_one_active_per_conversation" ON "runs"("conversation_id") WHERE "status" IN ('queued', 'running') AND "queue_reason" IS NOT 'BEHIND_ACTIVE_RUN';
-- The runs waiting behind an active one, per conversation, in order.
CREATE INDEX "runs_behind_idx" ON "runs"("conversation_id", "queued_at", "id") WHERE "status" = 'queued' AND "queue_reason" = 'BEHIND_ACTIVE_RUN';
