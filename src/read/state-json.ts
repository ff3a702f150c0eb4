// A checkpoint's channel values as JSON, and JSON values back into what a
// graph's channels take (editState). Messages read as the API types them
// (Message: id, role, content, toolCalls, toolCallId, name), so a client can
// take a message from a state, change it, and send it back as it is.
import { isBaseMessage, type BaseMessage } from "@langchain/core/messages";
import { toApiMessage } from "./messages.ts";

/** The wire names of MessageRole, as the Message type gives them. */
const WIRE_ROLES = { user: "USER", assistant: "ASSISTANT", tool: "TOOL" } as const;

/** A message as the Message type serializes it; system messages (never stored) as their type and text. */
export function messageJson(message: BaseMessage, index: number): Record<string, unknown> {
  const api = toApiMessage(message, index);
  if (!api) return { id: message.id ?? `message-${index}`, role: message._getType().toUpperCase(), content: String(message.content) };
  return { ...api, role: WIRE_ROLES[api.role] };
}

/** Any channel value as JSON: messages as the API types them, dates as ISO-8601, what cannot be told (functions) left out. */
export function stateJson(value: unknown, seen: Set<unknown> = new Set()): unknown {
  if (value === null || value === undefined) return null;
  if (isBaseMessage(value)) return messageJson(value, 0);
  if (Array.isArray(value)) {
    if (seen.has(value)) return null;
    seen.add(value);
    return value.map((item, i) => (isBaseMessage(item) ? messageJson(item, i) : stateJson(item, seen)));
  }
  if (value instanceof Date) return value.toISOString();
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "object") {
    if (seen.has(value)) return null;
    seen.add(value);
    if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [String(k), stateJson(v, seen)]));
    if (value instanceof Set) return [...value].map((v) => stateJson(v, seen));
    const toJSON = (value as { toJSON?: () => unknown }).toJSON;
    if (typeof toJSON === "function" && Object.getPrototypeOf(value) !== Object.prototype) return stateJson(toJSON.call(value), seen);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (typeof v !== "function" && v !== undefined) out[k] = stateJson(v, seen);
    return out;
  }
  return null;
}
