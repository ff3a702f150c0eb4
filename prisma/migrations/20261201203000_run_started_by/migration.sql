-- Who started each run (a principal's id), for the per-principal quotas: runs
-- active at once and runs started in the last minute are counted by
-- (started_by, status) and (started_by, started_at). Older runs started by no one.
ALTER TABLE "runs" ADD COLUMN "started_by" TEXT;

CREATE INDEX "runs_started_by_started_at_idx" ON "runs"("started_by", "started_at");
