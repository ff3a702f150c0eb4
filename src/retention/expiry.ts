// setConversationExpiry: the owner (or an admin) sets when a conversation is
// deleted, or clears it. Scoped as renameConversation is: another user's
// conversation is one that does not exist. A time already past is accepted and
// means "at the next sweep" (docs/retention.md).
import type { ConversationRecord } from "../domain/records.ts";
import { NotFoundError, requireUuid, ValidationError } from "../domain/errors.ts";
import { canSee, type Principal } from "../domain/principal.ts";
import type { RunStore } from "../storage/run-store/types.ts";
import type { RetentionStore } from "../storage/retention/types.ts";

/** The latest expiry accepted: PostgreSQL's and SQLite's dates both hold it, and no retention needs longer. */
const LATEST = Date.UTC(9999, 11, 31);

export class ConversationExpiry {
  constructor(
    private readonly runs: Pick<RunStore, "getConversation">,
    private readonly retention: Pick<RetentionStore, "setExpiry">,
    /** Told once the expiry is recorded: conversationsChanged subscribers see expiresAt change. */
    private readonly onChanged: (conversationId: string) => void = () => {},
  ) {}

  async set(conversationId: string, expiresAt: Date | null, principal: Principal): Promise<ConversationRecord> {
    requireUuid(conversationId, "conversationId");
    if (expiresAt !== null && (Number.isNaN(expiresAt.getTime()) || expiresAt.getTime() > LATEST || expiresAt.getTime() < 0)) {
      throw new ValidationError("expiresAt must be a date between 1970 and 9999", "expiresAt");
    }
    const conversation = await this.runs.getConversation(conversationId);
    if (!conversation || !canSee(principal, conversation)) throw new NotFoundError("Conversation", conversationId);
    const updated = await this.retention.setExpiry(conversationId, expiresAt);
    this.onChanged(conversationId);
    return updated;
  }
}
