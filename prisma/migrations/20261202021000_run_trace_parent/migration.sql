-- The W3C traceparent a run's span continues (the request that started it), so
-- the instance that claims a queued run continues the client's trace even when
-- another instance took the request.
ALTER TABLE "runs" ADD COLUMN "trace_parent" TEXT;
