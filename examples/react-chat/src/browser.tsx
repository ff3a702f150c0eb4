// The page's entry: one client for the page, and the app, hydrated over the
// server's markup (which it matches exactly, rejoining a live run after the
// state's lastSeq) or rendered afresh.
import { StrictMode } from "react";
import { createRoot, hydrateRoot } from "react-dom/client";
import { RunledgerProvider } from "@runledger/react";
import { App } from "./App.tsx";
import { createChatClient } from "./client.ts";
import type { PageData } from "./shared.ts";

declare global {
  interface Window {
    __CHAT__: PageData;
  }
}

const data = window.__CHAT__;
const client = createChatClient(data.api);
const app = (
  <StrictMode>
    <RunledgerProvider client={client}>
      <App conversationId={data.conversationId} initial={data.state} />
    </RunledgerProvider>
  </StrictMode>
);
const root = document.getElementById("root")!;
if (data.rendered) hydrateRoot(root, app);
else createRoot(root).render(app);
