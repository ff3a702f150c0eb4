-- AlterTable: the order interrupts were recorded in, for reads that list them
-- (a row's physical place moves when it is answered, so ctid cannot serve).
ALTER TABLE "interrupts" ADD COLUMN "position" BIGSERIAL NOT NULL;
