-- Webhooks (docs/webhooks.md): each run's targets, recorded with the run, and
-- the outbox of deliveries, written in the transaction that ends the run (or
-- records it waiting), so a crash after it still delivers. A delivery outlives
-- its run: it names the run but does not depend on it. A schedule keeps the
-- target its firings' runs get. The CHECKs are written by hand.

-- AlterTable
ALTER TABLE "schedules" ADD COLUMN     "webhook_events" TEXT,
ADD COLUMN     "webhook_url" TEXT;

-- CreateTable
CREATE TABLE "run_webhooks" (
    "run_id" TEXT COLLATE "C" NOT NULL,
    "url" TEXT NOT NULL,
    "events" TEXT NOT NULL,

    CONSTRAINT "run_webhooks_pkey" PRIMARY KEY ("run_id","url")
);

-- CreateTable
CREATE TABLE "webhook_deliveries" (
    "id" TEXT COLLATE "C" NOT NULL,
    "run_id" TEXT COLLATE "C" NOT NULL,
    "event" TEXT NOT NULL CHECK ("event" IN ('RUN_ENDED', 'RUN_WAITING')),
    "url" TEXT NOT NULL,
    "payload" TEXT NOT NULL,
    "status" TEXT NOT NULL CHECK ("status" IN ('pending', 'delivered', 'failed')),
    "attempt" INTEGER NOT NULL DEFAULT 0,
    "http_status" INTEGER,
    "error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "delivered_at" TIMESTAMPTZ(3),
    "next_attempt_at" TIMESTAMPTZ(3),
    "lease_owner" TEXT,
    "lease_until" TIMESTAMPTZ(3),

    CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "webhook_deliveries_status_next_attempt_at_idx" ON "webhook_deliveries"("status", "next_attempt_at");

-- CreateIndex
CREATE INDEX "webhook_deliveries_run_id_idx" ON "webhook_deliveries"("run_id");

-- AddForeignKey
ALTER TABLE "run_webhooks" ADD CONSTRAINT "run_webhooks_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;
