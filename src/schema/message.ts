// Messages of a thread, as the API shows them.
import type { ApiMessage } from "../read/messages.ts";
import { builder } from "./builder.ts";
import { MessageRole } from "./enums.ts";
import { Message } from "./refs.ts";

export const ToolCall = builder.objectRef<ApiMessage["toolCalls"][number]>("ToolCall").implement({
  fields: (t) => ({
    id: t.exposeString("id"),
    name: t.exposeString("name"),
    args: t.field({ type: "JSON", resolve: (c) => c.args }),
  }),
});

Message.implement({
  description: "A message of a thread. Assistant ids starting with run- are LangChain callback ids, unrelated to Run.id.",
  fields: (t) => ({
    id: t.exposeString("id"),
    role: t.field({ type: MessageRole, resolve: (m) => m.role }),
    content: t.exposeString("content"),
    toolCalls: t.field({ type: [ToolCall], resolve: (m) => m.toolCalls }),
    toolCallId: t.exposeString("toolCallId", { nullable: true }),
    name: t.exposeString("name", { nullable: true }),
  }),
});
