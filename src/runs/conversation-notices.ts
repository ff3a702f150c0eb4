// Telling conversationsChanged subscribers about a change, the one way every
// caller does it.
import type { ConversationChange } from "../domain/events.ts";
import type { EventBus } from "../storage/event-bus/types.ts";
import type { Logger } from "../logger.ts";

/**
 * Publishes the notice without waiting for it. The change it tells of is
 * already committed: a bus that cannot deliver it (Redis down) is logged as a
 * warning and never turns the request that made the change into a failure.
 */
export function announceConversationChange(bus: EventBus, logger: Logger, change: ConversationChange): void {
  bus
    .publishConversationChange(change)
    .catch((error: unknown) => logger.warn("conversation change not delivered", { conversationId: change.conversationId, kind: change.kind, error }));
}
