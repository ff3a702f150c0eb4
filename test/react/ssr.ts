// The server side of the SSR spec: reads the conversation (loadConversation,
// over HTTP as a server would) and renders the chat with react-dom/server from
// the state read; the page is handed both.
import { createElement as h } from "react";
import { renderToString } from "react-dom/server";
import { createRunledgerClient, loadConversation, type ConversationState } from "@runledger/client";
import { RunledgerProvider } from "@runledger/react";
import { Chat, stats } from "./chat.ts";

export async function renderConversation(url: string, conversationId: string): Promise<{ html: string; state: ConversationState; requests: string[] }> {
  const requests: string[] = [];
  // The server's own fetch, noting what the read asked for.
  const noting: typeof fetch = (input, init) => {
    requests.push(String(init?.body ?? ""));
    return fetch(input, init);
  };
  const state = await loadConversation({ url, fetch: noting }, conversationId);
  // A client for rendering only: the hooks' stores send nothing until a page attaches them.
  const client = createRunledgerClient({ url, fetch: noting });
  const html = renderToString(h(RunledgerProvider, { client }, h(Chat, { conversationId, initial: state })));
  await client.dispose();
  return { html, state, requests };
}

export { stats };
