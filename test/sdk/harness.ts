// What the @runledger/client specs share: clients of the package's sources on
// Node (the `ws` WebSocket), the server's own record to compare a store with
// (a run's whole event log, the thread's messages), and waiting on a store.
import WebSocket from "ws";
import { expect } from "vitest";
import {
  createRunledgerClient,
  type ChatMessage,
  type ConversationSnapshot,
  type ConversationStore,
  type RunEvent,
  type RunledgerClient,
  type ResumeStorage,
  type Transport,
} from "../../packages/client/src/index.ts";
import { RUN_EVENTS } from "../../packages/client/src/documents.ts";
import { collect, gql, wsClient } from "../../testkit/graphql.ts";
import { until } from "../../testkit/streaming.ts";

export function sdkClient(url: string, options: { storage?: ResumeStorage; transport?: Transport | "ws" | "sse" } = {}): RunledgerClient {
  return createRunledgerClient({ url, webSocketImpl: WebSocket, storage: options.storage, transport: options.transport ?? "ws" });
}

/** Waits until the store's snapshot satisfies `probe`. */
export function settled(
  store: ConversationStore,
  probe: (snapshot: ConversationSnapshot) => boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<ConversationSnapshot> {
  return until(() => (probe(store.getSnapshot()) ? store.getSnapshot() : null), what, timeoutMs);
}

/**
 * The run ended with `status` and the store has settled: it has read the
 * thread since (every message stored, or the partial text of a run that
 * stopped, or a message the server refused), and refilled every gap.
 */
export function ended(store: ConversationStore, runId: string, status: string, timeoutMs = 20_000): Promise<ConversationSnapshot> {
  return settled(
    store,
    (s) =>
      s.run?.id === runId &&
      s.run.status === status &&
      !s.busy &&
      s.run.gaps.every((g) => g.refilled) &&
      s.messages.every((m) => (m.state === "stored" || m.state === "partial" || m.state === "unsent") && !m.incomplete),
    `run ${runId} ${status}, the thread read and every gap refilled`,
    timeoutMs,
  );
}

/** Every event the store applies, in order. */
export function seenEvents(store: ConversationStore): RunEvent[] {
  const seen: RunEvent[] = [];
  store.onEvent((event) => seen.push(event));
  return seen;
}

/** A run's whole log as the server sends it to a subscriber that asks from the start, with the client's own selection. */
export function observeRun(url: string, runId: string, token?: string): { done: Promise<RunEvent[]>; events: () => RunEvent[]; dispose: () => void } {
  const stream = collect<{ runEvents: RunEvent }>(wsClient(url, { token }), RUN_EVENTS, { runId });
  return {
    done: stream.done.then((results) => results.map((r) => r.runEvents)),
    events: () => stream.results.map((r) => r.runEvents),
    dispose: stream.dispose,
  };
}

export async function serverLog(url: string, runId: string, token?: string): Promise<RunEvent[]> {
  return observeRun(url, runId, token).done;
}

/** The events of one run, from a store's seen events. */
export function ofRun(events: readonly RunEvent[], runId: string): RunEvent[] {
  return events.filter((e) => e.runId === runId);
}

/** Seen exactly the log: every seq once, in order, each event as the server sent it. */
export function expectExactly(seen: readonly RunEvent[], log: readonly RunEvent[]): void {
  expect(seen.map((e) => e.seq)).toEqual(log.map((e) => e.seq));
  expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1));
  expect(seen).toEqual(log);
}

const THREAD = /* GraphQL */ `
  query SdkThread($id: ID!) {
    conversation(id: $id) {
      messages { id role content toolCallId toolCalls { id name args } }
      runs(first: 50) { totalCount edges { node { id kind status errorCode partialOutput input } } }
    }
  }
`;

export interface ServerThread {
  messages: { id: string; role: string; content: string; toolCallId: string | null; toolCalls: { id: string; name: string; args: unknown }[] }[];
  runs: { id: string; kind: string; status: string; errorCode: string | null; partialOutput: string | null; input: string | null }[];
}

export async function serverThread(url: string, conversationId: string, token?: string): Promise<ServerThread> {
  const result = await gql(url, THREAD, { id: conversationId }, token ? { authorization: `Bearer ${token}` } : {});
  if (result.errors?.length) throw new Error(JSON.stringify(result.errors));
  const { conversation } = result.data;
  return { messages: conversation.messages, runs: conversation.runs.edges.map((e: { node: ServerThread["runs"][number] }) => e.node) };
}

const CHECKPOINT_IDS = /* GraphQL */ `
  query SdkCheckpointIds($id: ID!, $after: String) {
    conversation(id: $id) {
      checkpoints(first: 100, after: $after) {
        edges { node { id source step messageCount lastMessage { id role content } } }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
`;

export interface ServerCheckpoint {
  id: string;
  source: string;
  step: number;
  messageCount: number;
  lastMessage: { id: string; role: string; content: string } | null;
}

/** Every checkpoint of the conversation as the server stores them, oldest first. */
export async function serverCheckpoints(url: string, conversationId: string, token?: string): Promise<ServerCheckpoint[]> {
  const all: ServerCheckpoint[] = [];
  let after: string | null = null;
  for (;;) {
    const result = await gql(url, CHECKPOINT_IDS, { id: conversationId, after }, token ? { authorization: `Bearer ${token}` } : {});
    if (result.errors?.length) throw new Error(JSON.stringify(result.errors));
    const page: { edges: { node: ServerCheckpoint }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } = result.data.conversation.checkpoints;
    all.push(...page.edges.map((e) => e.node));
    if (!page.pageInfo.hasNextPage) return all;
    after = page.pageInfo.endCursor;
  }
}

/** The store's stored messages in the server's shape. */
export function storedMessages(snapshot: ConversationSnapshot): ServerThread["messages"] {
  return snapshot.messages
    .filter((m) => m.state === "stored")
    .map((m: ChatMessage) => ({ id: m.id, role: m.role, content: m.content, toolCallId: m.toolCallId, toolCalls: m.toolCalls.map((c) => ({ ...c })) }));
}

/** The text of a run's TokenEvents, in seq order. */
export function textOf(events: readonly RunEvent[]): string {
  return events.map((e) => (e.__typename === "TokenEvent" ? e.text : "")).join("");
}

/** `n` numbered tokens: "t1 t2 t3 ...". */
export function numbered(n: number, prefix = "t"): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}${i + 1} `);
}

/** A transport that passes everything through to `inner` and notes the variables of every subscription made. */
export function noting(inner: Transport): Transport & { subscriptions: { query: string; variables: Record<string, unknown> }[] } {
  const subscriptions: { query: string; variables: Record<string, unknown> }[] = [];
  return {
    subscriptions,
    connection: inner.connection,
    request: (operation) => inner.request(operation),
    subscribe(operation, sink) {
      subscriptions.push({ query: operation.query, variables: { ...operation.variables } });
      return inner.subscribe(operation, sink);
    },
    reconnect: () => inner.reconnect(),
    dispose: () => inner.dispose(),
  };
}

/** The `after` of each runEvents subscription made for a run. */
export function aftersOf(transport: ReturnType<typeof noting>, runId: string): number[] {
  return transport.subscriptions
    .filter((s) => s.query.includes("RunledgerRunEvents") && s.variables.runId === runId)
    .map((s) => Number(s.variables.after ?? 0));
}
