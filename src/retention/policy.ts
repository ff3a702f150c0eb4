// What retention keeps, from the settings and the agent file: a conversation's
// effective expiry (what Conversation.expiresAt answers) and the expiry policy
// the sweeper hands to storage. One rule for both, so the API never tells a
// conversation a date the sweeper does not act on.
import type { RetentionConfig } from "../config.ts";
import type { ConversationRecord } from "../domain/records.ts";
import type { ExpiryPolicy } from "../storage/retention/types.ts";

const DAY_MS = 24 * 60 * 60 * 1000;

/** The expiry policy for these agents (each `retention.conversationDays` where set) and RETENTION_CONVERSATION_DAYS. */
export function expiryPolicy(
  config: Pick<RetentionConfig, "conversationDays">,
  agents: readonly { name: string; retention?: { conversationDays: number } }[],
): ExpiryPolicy {
  const agentDays: Record<string, number> = {};
  for (const agent of agents) if (agent.retention) agentDays[agent.name] = agent.retention.conversationDays;
  return { defaultDays: config.conversationDays, agentDays };
}

/**
 * When the conversation is deleted: its own expiry when set, else its last
 * activity (updatedAt) plus its agent's days or the deployment's; null when
 * neither applies (kept forever).
 */
export function effectiveExpiry(conversation: Pick<ConversationRecord, "expiresAt" | "updatedAt" | "agent">, policy: ExpiryPolicy): Date | null {
  if (conversation.expiresAt) return conversation.expiresAt;
  const days = policy.agentDays[conversation.agent] ?? policy.defaultDays;
  return days === null ? null : new Date(conversation.updatedAt.getTime() + days * DAY_MS);
}
