-- When each starter's latest admitted run was asked for (the queue's round
-- robin, read by every claim): the newest row of this index per starter, found
-- without reading the starter's whole history.
CREATE INDEX "runs_served_idx" ON "runs"("started_by", "started_at") WHERE "status" <> 'queued';
