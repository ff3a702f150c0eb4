// createRunledgerClient: one connection per client, and a store per
// conversation on top of it.
import { ConversationStore, type ConversationOptions, type ConversationState } from "./conversation.js";
import type { ConversationList, ConversationListOptions } from "./conversation-list.js";
import { lazyConversationList } from "./lazy-conversation-list.js";
import { ClientCore, coreOf as coreOfClient, registerCore, type Result, type Success } from "./core.js";
import type { Document } from "./documents.js";
import { createAutoTransport } from "./fallback.js";
import type { Readable } from "./observable.js";
import { defaultStorage, type ResumeStorage } from "./resume.js";
import { frameScheduler, type Scheduler } from "./schedule.js";
import { keepSubscribed, type StreamHandlers } from "./stream.js";
import type { ConnectionState, CredentialProvider, Transport } from "./transport.js";
import { createWebSocketTransport } from "./websocket.js";

export interface RunledgerClientOptions {
  /** runledger's base URL (http://127.0.0.1:4000) or its /graphql endpoint. Needed unless `transport` is a Transport. */
  url?: string;
  /**
   * Answers the credential to send (an API key, API_TOKEN or a JWT), or
   * null for none (`() => Promise<string | null>`; a plain string or
   * undefined is taken too). Asked on every connection and request, and again
   * after the server refuses one (WebSocket close 4401, HTTP 401), so it can
   * hand out a refreshed token. Default: no credential.
   */
  credentials?: CredentialProvider;
  /** Where resume points are kept: the tab's sessionStorage in a browser, memory elsewhere. Any getItem/setItem/removeItem store fits. */
  storage?: ResumeStorage;
  /**
   * - `"auto"` (the default): one WebSocket, with Server-Sent Events instead
   *   when there is no WebSocket or it cannot be made while HTTP works;
   * - `"ws"` or `"sse"`: that one only (`"websocket"` is the same as `"ws"`);
   * - a Transport: your own, such as the test transport of `@runledger/client/testing`.
   */
  transport?: "auto" | "ws" | "websocket" | "sse" | Transport;
  /** The WebSocket class where there is no global one (Node 20: the `ws` package's default export). */
  webSocketImpl?: unknown;
  /** The fetch for queries, mutations and SSE; the global one by default. */
  fetch?: typeof fetch;
  /** How often the WebSocket is pinged (ms; default 10 000); a missing pong drops and remakes it. */
  keepAliveMs?: number;
  /** How many times a request that got no answer is sent again, with backoff and the same idempotency key (default 5). */
  retries?: number;
  /** How long after a streamed event the resume point is written, at most (ms; default 100). */
  persistMs?: number;
  /** How often a QUEUED run's place in the queue is read again (ms; default 2 000). */
  queuePollMs?: number;
  /**
   * When stores tell their listeners of streamed changes: at most once per
   * call, with every change made by then. Default `frameScheduler` (the next
   * animation frame in a browser, 16 ms elsewhere); `microtaskScheduler`,
   * `syncScheduler` (every change), or your own.
   */
  schedule?: Scheduler;
}

export interface RunledgerClient {
  /** The connection's state: connecting, connected, reconnecting, unauthorized or offline. */
  readonly connection: Readable<ConnectionState>;
  readonly transport: Transport;
  /**
   * A store following one conversation (null or nothing: a new one, created
   * by its first submit). Each call makes a store of its own; close() it when done.
   * `{attach: false}`: it sends nothing until attach() (what a view does once mounted).
   */
  conversation(conversationId?: string | null, options?: ConversationOptions): ConversationStore;
  /** A store starting from a state a server render read (loadConversation): it shows the same, and rejoins the live run after its lastSeq. */
  /**
   * The caller's conversations, newest first, kept live (a list of its own per
   * call; close() it when done). `filter`: `owner` (an admin's list of one
   * owner's), `pageSize` (default 30), `attach` (default true). Its store is
   * loaded with the first list (`loading` until then); createConversationList
   * makes one at once, and bundles it with the page.
   */
  conversations(filter?: ConversationListOptions): ConversationList;
  hydrate(state: ConversationState, options?: Omit<ConversationOptions, "initial">): ConversationStore;
  /**
   * A query of your own on the client's connection and credential. Sent again,
   * with backoff, when no answer came (up to `retries`). Resolves to its data;
   * rejects with an Error in words when the server answers with errors.
   */
  query<T, V extends Record<string, unknown>>(document: Document<T, V>, variables: V): Promise<T>;
  /**
   * A mutation of your own whose result `field` is a union of a success type
   * and refusals implementing Error (select `... on Error { code message }`):
   * `{ok: true, value}` with the success, or `{ok: false, error}` with the
   * refusal's code, message and typed fields, NETWORK or UNAUTHORIZED. Sent
   * once; `{retry: true}` sends it again when no answer came, which is safe
   * only for a mutation that may run twice (one with an idempotencyKey).
   */
  mutate<T, V extends Record<string, unknown>, F extends keyof T>(
    document: Document<T, V>,
    variables: V,
    field: F,
    options?: { retry?: boolean },
  ): Promise<Result<Success<T[F]>>>;
  /**
   * A subscription of your own that must not end silently: any end you did
   * not ask for (the server completed or refused it, the connection dropped)
   * subscribes it again with `variables()` read at that moment, unless
   * `handlers.ended` returns false. Returns the function that ends it.
   * For a run's events, followRunEvents resumes after the last seq for you.
   */
  subscribe<T, V extends Record<string, unknown>>(document: Document<T, V>, variables: () => V, handlers: StreamHandlers<T>): () => void;
  /** Connects again at once: after `unauthorized`, once the credential provider has a new credential. */
  reconnect(): void;
  /** Closes every store and the connection. */
  dispose(): Promise<void>;
}

function transportFrom(options: RunledgerClientOptions): Transport {
  const choice = options.transport ?? "auto";
  if (typeof choice === "object") return choice;
  if (!options.url) throw new Error("createRunledgerClient: `url` is needed (runledger's base URL, http://127.0.0.1:4000)");
  const settings = {
    url: options.url,
    credentials: options.credentials,
    fetch: options.fetch,
    webSocketImpl: options.webSocketImpl,
    keepAliveMs: options.keepAliveMs,
  };
  if (choice === "ws" || choice === "websocket") return createWebSocketTransport(settings);
  // SSE through the auto transport, which loads it (sse.ts) only when it is used.
  return createAutoTransport(settings, choice === "sse" || undefined);
}

/** The client's core (for what is made on a client outside it). */
export function coreOf(client: RunledgerClient): ClientCore {
  return coreOfClient(client);
}

export function createRunledgerClient(options: RunledgerClientOptions): RunledgerClient {
  const transport = transportFrom(options);
  const core = new ClientCore({
    transport,
    storage: options.storage ?? defaultStorage(),
    retries: options.retries ?? 5,
    persistMs: options.persistMs ?? 100,
    queuePollMs: options.queuePollMs ?? 2_000,
    schedule: options.schedule ?? frameScheduler,
  });
  // A page about to unload writes its resume points first.
  const events = globalThis as {
    addEventListener?: (type: string, listener: () => void) => void;
    removeEventListener?: (type: string, listener: () => void) => void;
  };
  const flush = () => core.flushAll();
  events.addEventListener?.("pagehide", flush);
  const client: RunledgerClient = {
    connection: transport.connection,
    transport,
    conversation: (conversationId = null, conversationOptions) => new ConversationStore(core, conversationId, conversationOptions),
    conversations: (filter) => lazyConversationList(core, filter),
    hydrate: (state, conversationOptions) => new ConversationStore(core, state.conversationId, { ...conversationOptions, initial: state }),
    query: (document, variables) => core.query(document, variables),
    mutate: (document, variables, field, mutateOptions) => core.mutate(document, variables, field, mutateOptions?.retry ?? false),
    subscribe: (document, variables, handlers) => keepSubscribed(transport, document, variables, handlers),
    reconnect: () => transport.reconnect(),
    async dispose() {
      events.removeEventListener?.("pagehide", flush);
      await core.dispose();
    },
  };
  registerCore(client, core);
  return client;
}
