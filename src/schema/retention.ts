// Retention in the API (docs/retention.md): Conversation.expiresAt, when the
// sweeper deletes the conversation, and setConversationExpiry, its owner's own
// date. Scoped as renameConversation: another user's conversation does not exist.
import type { ConversationRecord } from "../domain/records.ts";
import { NotFoundError, ValidationError } from "../domain/errors.ts";
import { effectiveExpiry } from "../retention/policy.ts";
import { builder } from "./builder.ts";
import { Conversation } from "./refs.ts";

builder.objectField(Conversation, "expiresAt", (t) =>
  t.field({
    type: "DateTime",
    nullable: true,
    description:
      "When retention deletes it: the date set by setConversationExpiry, else its last activity (updatedAt) plus its agent's retention.conversationDays or RETENTION_CONVERSATION_DAYS; null when kept forever. A date already past means at the next sweep.",
    resolve: (c, _a, ctx) => effectiveExpiry(c, ctx.retentionPolicy),
  }),
);

const SetConversationExpiryInput = builder.inputType("SetConversationExpiryInput", {
  fields: (t) => ({
    conversationId: t.id({ required: true }),
    expiresAt: t.field({
      type: "DateTime",
      required: false,
      description: "When to delete it (a past date: at the next sweep); null clears it, so the agent's or the deployment's idle days apply again.",
    }),
  }),
});

const SetConversationExpirySuccess = builder.objectRef<{ conversation: ConversationRecord }>("SetConversationExpirySuccess").implement({
  fields: (t) => ({ conversation: t.field({ type: Conversation, resolve: (r) => r.conversation }) }),
});

builder.mutationField("setConversationExpiry", (t) =>
  t.field({
    type: SetConversationExpirySuccess,
    description: "Sets (or with null clears) when retention deletes the conversation. Its owner or an admin.",
    args: { input: t.arg({ type: SetConversationExpiryInput, required: true }) },
    errors: { types: [ValidationError, NotFoundError], directResult: true, union: { name: "SetConversationExpiryResult" } },
    resolve: async (_root, { input }, ctx) => ({
      conversation: await ctx.expiry.set(String(input.conversationId), (input.expiresAt as Date | null | undefined) ?? null, ctx.principal),
    }),
  }),
);
