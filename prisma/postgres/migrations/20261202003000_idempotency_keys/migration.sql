-- Idempotency keys: a client-chosen key per principal, the operation and a hash
-- of its input, and what the first call created. Written in the same
-- transaction as the run it started, so concurrent retries on any instance
-- create one run; a key is kept 24 hours.

-- CreateTable
CREATE TABLE "idempotency_keys" (
    "principal" TEXT COLLATE "C" NOT NULL,
    "key" TEXT COLLATE "C" NOT NULL,
    "operation" TEXT NOT NULL,
    "request_hash" TEXT NOT NULL,
    "conversation_id" TEXT COLLATE "C",
    "run_id" TEXT COLLATE "C",
    "created_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY ("principal", "key")
);
CREATE INDEX "idempotency_keys_created_at_idx" ON "idempotency_keys"("created_at");
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
