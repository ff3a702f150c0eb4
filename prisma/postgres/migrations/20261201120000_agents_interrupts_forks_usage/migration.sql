-- Agents, human-in-the-loop, forks and usage.

-- AlterTable
ALTER TABLE "conversations" ADD COLUMN "agent" TEXT NOT NULL DEFAULT 'default',
ADD COLUMN "forked_from_conversation_id" TEXT COLLATE "C",
ADD COLUMN "forked_from_checkpoint_id" TEXT COLLATE "C";
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_forked_from_conversation_id_fkey" FOREIGN KEY ("forked_from_conversation_id") REFERENCES "conversations"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AlterTable
ALTER TABLE "runs" DROP CONSTRAINT "runs_status_check";
ALTER TABLE "runs" ADD CONSTRAINT "runs_status_check" CHECK ("status" IN ('running', 'completed', 'failed', 'cancelled', 'interrupted', 'waiting'));
ALTER TABLE "runs" ADD COLUMN "start_checkpoint_id" TEXT COLLATE "C",
ADD COLUMN "input_tokens" INTEGER,
ADD COLUMN "output_tokens" INTEGER,
ADD COLUMN "model_calls" INTEGER,
ADD COLUMN "time_to_first_token_ms" INTEGER,
ADD COLUMN "model_duration_ms" INTEGER;

-- CreateTable
CREATE TABLE "interrupts" (
    "run_id" TEXT COLLATE "C" NOT NULL,
    "id" TEXT COLLATE "C" NOT NULL,
    "conversation_id" TEXT COLLATE "C" NOT NULL,
    "node" TEXT NOT NULL,
    "value" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "answered_by_run_id" TEXT COLLATE "C",
    "answer" JSONB,
    "answered_at" TIMESTAMPTZ(3),

    CONSTRAINT "interrupts_pkey" PRIMARY KEY ("run_id","id")
);
CREATE INDEX "interrupts_conversation_id_idx" ON "interrupts"("conversation_id");
ALTER TABLE "interrupts" ADD CONSTRAINT "interrupts_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "interrupts" ADD CONSTRAINT "interrupts_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
