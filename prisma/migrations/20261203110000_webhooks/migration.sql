-- Webhooks (docs/webhooks.md): each run's targets, recorded with the run, and
-- the outbox of deliveries, written in the transaction that ends the run (or
-- records it waiting), so a crash after it still delivers. A delivery outlives
-- its run: it names the run but does not depend on it. A schedule keeps the
-- target its firings' runs get. The CHECKs are written by hand.

-- CreateTable
CREATE TABLE "run_webhooks" (
    "run_id" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "events" TEXT NOT NULL,

    PRIMARY KEY ("run_id", "url"),
    CONSTRAINT "run_webhooks_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "runs" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "webhook_deliveries" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "run_id" TEXT NOT NULL,
    "event" TEXT NOT NULL CHECK ("event" IN ('RUN_ENDED', 'RUN_WAITING')),
    "url" TEXT NOT NULL,
    "payload" TEXT NOT NULL,
    "status" TEXT NOT NULL CHECK ("status" IN ('pending', 'delivered', 'failed')),
    "attempt" INTEGER NOT NULL DEFAULT 0,
    "http_status" INTEGER,
    "error" TEXT,
    "created_at" DATETIME NOT NULL,
    "delivered_at" DATETIME,
    "next_attempt_at" DATETIME,
    "lease_owner" TEXT,
    "lease_until" DATETIME
);

-- AlterTable
ALTER TABLE "schedules" ADD COLUMN "webhook_url" TEXT;
ALTER TABLE "schedules" ADD COLUMN "webhook_events" TEXT;

-- CreateIndex
CREATE INDEX "webhook_deliveries_status_next_attempt_at_idx" ON "webhook_deliveries"("status", "next_attempt_at");

-- CreateIndex
CREATE INDEX "webhook_deliveries_run_id_idx" ON "webhook_deliveries"("run_id");
