// A message as the API types it (Message: id, role, content, toolCalls,
// toolCallId, name) back into a LangChain message, for what editState writes
// into a graph's channels; any other message-like value as LangChain coerces it.
import { AIMessage, HumanMessage, ToolMessage, coerceMessageLikeToMessage, type BaseMessage, type BaseMessageLike } from "@langchain/core/messages";

/**
 * A message given to editState: as the Message type reads (role USER,
 * ASSISTANT or TOOL, any case), or anything LangChain's messages reducer takes
 * ({role, content}, a serialized message). Throws with the reason otherwise.
 */
export function messageFromJson(value: unknown): BaseMessage {
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new Error("a message must be an object");
  const m = value as { id?: unknown; role?: unknown; content?: unknown; toolCalls?: unknown; toolCallId?: unknown; name?: unknown };
  const role = typeof m.role === "string" ? m.role.toLowerCase() : null;
  const apiShaped = "toolCalls" in m || "toolCallId" in m || (typeof m.role === "string" && m.role === m.role.toUpperCase());
  if (apiShaped && (role === "user" || role === "assistant" || role === "tool")) {
    if (typeof m.content !== "string") throw new Error("a message's content must be a string");
    const id = typeof m.id === "string" && m.id ? m.id : undefined;
    const name = typeof m.name === "string" ? m.name : undefined;
    if (role === "user") return new HumanMessage({ id, content: m.content, name });
    if (role === "tool") {
      if (typeof m.toolCallId !== "string" || !m.toolCallId) throw new Error("a TOOL message needs its toolCallId");
      return new ToolMessage({ id, content: m.content, tool_call_id: m.toolCallId, name });
    }
    const calls = m.toolCalls ?? [];
    if (!Array.isArray(calls)) throw new Error("toolCalls must be a list");
    const toolCalls = calls.map((call, i) => {
      const c = call as { id?: unknown; name?: unknown; args?: unknown } | null;
      if (!c || typeof c.name !== "string" || !c.name) throw new Error(`toolCalls[${i}] needs a name`);
      const args = c.args ?? {};
      if (typeof args !== "object" || args === null || Array.isArray(args)) throw new Error(`toolCalls[${i}].args must be an object`);
      return { id: typeof c.id === "string" ? c.id : undefined, name: c.name, args: args as Record<string, unknown>, type: "tool_call" as const };
    });
    return new AIMessage({ id, content: m.content, name, tool_calls: toolCalls });
  }
  return coerceMessageLikeToMessage(value as BaseMessageLike);
}
