-- Who owns each conversation: the principal that created it (a JWT's user, an
-- API key's user, "admin" for API_TOKEN, "local" without authentication). Rows
-- from before belong to no one (NULL): only admins see them. A user's list is
-- read by (owner, updated_at, id), so it seeks and reads in order like the full list.
ALTER TABLE "conversations" ADD COLUMN "owner" TEXT;

CREATE INDEX "conversations_owner_updated_at_id_idx" ON "conversations"("owner", "updated_at", "id");
