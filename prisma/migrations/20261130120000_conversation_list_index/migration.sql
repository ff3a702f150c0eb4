-- The conversation list is ordered by (updated_at DESC, id DESC) and paged from a
-- cursor row: an index on both columns lets a page seek to its cursor and read
-- its rows in order, instead of scanning every newer row and sorting ties.
DROP INDEX "conversations_updated_at_idx";

CREATE INDEX "conversations_updated_at_id_idx" ON "conversations"("updated_at", "id");
