-- Retention (docs/retention.md): a conversation's own expiry, set by its owner
-- (null: the agent's or the deployment's idle days apply), and the lease that
-- lets one instance at a time sweep.

-- AlterTable
ALTER TABLE "conversations" ADD COLUMN "expires_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "retention_leases" (
    "name" TEXT NOT NULL,
    "holder" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "retention_leases_pkey" PRIMARY KEY ("name")
);

-- CreateIndex
CREATE INDEX "conversations_expires_at_idx" ON "conversations"("expires_at");
