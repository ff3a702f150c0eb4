// Renaming and deleting conversations: validation first, then one write, then
// the notice to conversationsChanged subscribers (which cannot fail the request).
import type { ConversationRecord } from "../domain/records.ts";
import { NotFoundError, requireUuid, ValidationError } from "../domain/errors.ts";
import { canSee, type Principal } from "../domain/principal.ts";
import type { RunStore } from "../storage/run-store/types.ts";
import type { EventBus } from "../storage/event-bus/types.ts";
import type { Logger } from "../logger.ts";
import { announceConversationChange } from "./conversation-notices.ts";

export const TITLE_LIMIT = 200;

export class ConversationService {
  constructor(
    private readonly store: RunStore,
    private readonly bus: EventBus,
    private readonly logger: Logger,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Another user's conversation is one that does not exist (its owner never changes, so a check before the write holds). */
  async #requireVisible(conversationId: string, principal: Principal): Promise<void> {
    const conversation = await this.store.getConversation(conversationId);
    if (!conversation || !canSee(principal, conversation)) throw new NotFoundError("Conversation", conversationId);
  }

  async rename(conversationId: string, title: string, principal: Principal): Promise<ConversationRecord> {
    requireUuid(conversationId, "conversationId");
    const trimmed = title.trim();
    if (trimmed.length === 0) throw new ValidationError("title must not be blank", "title");
    if (Array.from(trimmed).length > TITLE_LIMIT) throw new ValidationError(`title is longer than ${TITLE_LIMIT} characters`, "title");
    if (/[\u0000-\u001f\u007f]/.test(trimmed)) throw new ValidationError("title must be one line without control characters", "title");
    await this.#requireVisible(conversationId, principal);
    const conversation = await this.store.renameConversation(conversationId, trimmed, this.now());
    announceConversationChange(this.bus, this.logger, { conversationId, kind: "updated", at: this.now() });
    return conversation;
  }

  async delete(conversationId: string, principal: Principal): Promise<ConversationRecord> {
    requireUuid(conversationId, "conversationId");
    await this.#requireVisible(conversationId, principal);
    const conversation = await this.store.deleteConversation(conversationId);
    announceConversationChange(this.bus, this.logger, { conversationId, kind: "deleted", at: this.now(), snapshot: conversation });
    return conversation;
  }
}
