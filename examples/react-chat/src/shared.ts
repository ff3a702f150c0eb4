// What the example's server and its page share: the data the server hands the
// page, and what GET /token answers.
import type { ConversationState } from "@runledger/client";

/** A credential for runledger, as GET /token answers it. */
export interface Token {
  /** An API key, API_TOKEN or a JWT; null when runledger needs none. */
  token: string | null;
  /** When it stops being accepted (ms since the epoch); null: never. */
  expiresAt: number | null;
}

/** What the server hands the page (window.__CHAT__). */
export interface PageData {
  /** runledger's URL, as the browser reaches it. */
  api: string;
  /** The conversation the URL names (?c=), or null for a new one. */
  conversationId: string | null;
  /** The page holds the server's markup: hydrate it rather than render afresh. */
  rendered: boolean;
  /** The state the server rendered the conversation from (loadConversation), or null. */
  state: ConversationState | null;
}

export interface ExampleServerOptions {
  /** runledger's base URL (http://127.0.0.1:4000). */
  api: string;
  /** The folder holding the built page script, app.js. */
  publicDir: string;
  /** Default 5173 (0: any free port). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Render pages on the server (default true); false: the page renders itself and rejoins from sessionStorage. */
  ssr?: boolean;
  /** The credential for the signed-in user: GET /token answers it, and server rendering reads with it. Default: none. */
  token?: () => Token | Promise<Token>;
}

export interface ExampleServer {
  /** Where the page is served (http://127.0.0.1:5173). */
  url: string;
  close(): Promise<void>;
}
