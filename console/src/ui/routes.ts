// The console's place in the URL fragment, so a reload or a shared link opens
// the same conversation: #/c/<id>, #/new, or nothing.

export type Selection = { kind: "none" } | { kind: "new" } | { kind: "conversation"; id: string };

export const NEW_CONVERSATION_HREF = "#/new";

export function conversationHref(id: string): string {
  return `#/c/${id}`;
}

export function readSelection(hash: string = location.hash): Selection {
  if (hash === NEW_CONVERSATION_HREF) return { kind: "new" };
  const match = /^#\/c\/([0-9a-fA-F-]{36})$/.exec(hash);
  return match ? { kind: "conversation", id: match[1]!.toLowerCase() } : { kind: "none" };
}
