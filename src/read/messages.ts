// LangChain messages → the API's Message shape. System messages never reach
// the API (and are never stored in a thread in the first place).
import type { BaseMessage } from "@langchain/core/messages";
import { messageText } from "../agent/token-tap.ts";

export type MessageRoleValue = "user" | "assistant" | "tool";

export interface ApiMessage {
  id: string;
  role: MessageRoleValue;
  content: string;
  toolCalls: { id: string; name: string; args: unknown }[];
  toolCallId: string | null;
  name: string | null;
}

const ROLES: Record<string, MessageRoleValue | undefined> = { human: "user", ai: "assistant", tool: "tool" };

export function toApiMessage(message: BaseMessage, index: number): ApiMessage | null {
  const role = ROLES[message._getType()];
  if (!role) return null;
  const m = message as BaseMessage & { tool_calls?: { id?: string; name: string; args: unknown }[]; tool_call_id?: string };
  return {
    id: message.id ?? `message-${index}`,
    role,
    content: messageText(message),
    toolCalls: (m.tool_calls ?? []).map((c) => ({ id: c.id ?? "", name: c.name, args: c.args ?? {} })),
    toolCallId: m.tool_call_id ?? null,
    name: message.name ?? null,
  };
}

export function toApiMessages(messages: BaseMessage[]): ApiMessage[] {
  return messages.map(toApiMessage).filter((m): m is ApiMessage => m !== null);
}
