// Renaming and deleting conversations: validation first, then one write, then
// the notice to conversationsChanged subscribers (which cannot fail the request).
import type { ConversationRecord } from "../domain/records.ts";
import { requireUuid, ValidationError } from "../domain/errors.ts";
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

  async rename(conversationId: string, title: string): Promise<ConversationRecord> {
    requireUuid(conversationId, "conversationId");
    const trimmed = title.trim();
    if (trimmed.length === 0) throw new ValidationError("title must not be blank", "title");
    if (Array.from(trimmed).length > TITLE_LIMIT) throw new ValidationError(`title is longer than ${TITLE_LIMIT} characters`, "title");
    if (/[\u0000-\u001f\u007f]/.test(trimmed)) throw new ValidationError("title must be one line without control characters", "title");
    const conversation = await this.store.renameConversation(conversationId, trimmed, this.now());
    announceConversationChange(this.bus, this.logger, { conversationId, kind: "updated", at: this.now() });
    return conversation;
  }

  async delete(conversationId: string): Promise<ConversationRecord> {
    requireUuid(conversationId, "conversationId");
    const conversation = await this.store.deleteConversation(conversationId);
    announceConversationChange(this.bus, this.logger, { conversationId, kind: "deleted", at: this.now(), snapshot: conversation });
    return conversation;
  }
}
