-- Edits: a run of kind 'edit' records a change to a thread's state
-- (editState: LangGraph's updateState), with what it wrote in "edit"
-- ({values, asNode}); the checkpoint it edited is its start_checkpoint_id.
ALTER TABLE "runs" DROP CONSTRAINT "runs_kind_check";
ALTER TABLE "runs" ADD CONSTRAINT "runs_kind_check" CHECK ("kind" IN ('start', 'resume', 'edit'));
ALTER TABLE "runs" ADD COLUMN "edit" JSONB;
