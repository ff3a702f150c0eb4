// Real GraphQL clients for tests: plain HTTP POST, graphql-ws over a WebSocket,
// and graphql-sse over HTTP.
import { createClient as createWsClient, type Client as WsClient } from "graphql-ws";
import { createClient as createSseClient, type Client as SseClient } from "graphql-sse";
import WebSocket from "ws";

export interface GraphQLResponse<T = any> {
  data?: T;
  errors?: { message: string; extensions?: Record<string, unknown>; path?: unknown[] }[];
}

export async function gql<T = any>(baseUrl: string, query: string, variables?: Record<string, unknown>, headers: Record<string, string> = {}): Promise<GraphQLResponse<T>> {
  const response = await fetch(`${baseUrl}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/graphql-response+json", ...headers },
    body: JSON.stringify({ query, variables }),
  });
  return (await response.json()) as GraphQLResponse<T>;
}

/** gql(), failing the test on any GraphQL error. */
export async function gqlOk<T = any>(baseUrl: string, query: string, variables?: Record<string, unknown>): Promise<T> {
  const result = await gql<T>(baseUrl, query, variables);
  if (result.errors?.length) throw new Error(`GraphQL errors: ${JSON.stringify(result.errors)}`);
  return result.data!;
}

export function wsClient(baseUrl: string, options: { token?: string; lazy?: boolean } = {}): WsClient {
  return createWsClient({
    url: baseUrl.replace(/^http/, "ws") + "/graphql",
    webSocketImpl: WebSocket,
    lazy: options.lazy ?? true,
    // A non-lazy client reports the socket's close to console.error by default; tests watch the "closed" event instead.
    onNonLazyError: () => {},
    retryAttempts: 0,
    connectionParams: options.token ? { authorization: `Bearer ${options.token}` } : undefined,
  });
}

export function sseClient(baseUrl: string, headers: Record<string, string> = {}): SseClient {
  return createSseClient({ url: `${baseUrl}/graphql`, retryAttempts: 0, headers });
}

/** Collects every result of a subscription until it completes (or errors). */
export function collect<T = any>(
  client: WsClient | SseClient,
  query: string,
  variables?: Record<string, unknown>,
): { done: Promise<T[]>; results: T[]; dispose: () => void } {
  const results: T[] = [];
  let dispose = () => {};
  const done = new Promise<T[]>((resolve, reject) => {
    dispose = client.subscribe<T>(
      { query, variables },
      {
        next: (value) => {
          if (value.errors?.length) reject(new Error(JSON.stringify(value.errors)));
          else results.push(value.data as T);
        },
        error: (error) => reject(error instanceof Error ? error : new Error(JSON.stringify(error))),
        complete: () => resolve(results),
      },
    ) as () => void;
  });
  return { done, results, dispose: () => dispose() };
}

export const RUN_EVENTS = /* GraphQL */ `
  subscription RunEvents($runId: ID!, $after: Int) {
    runEvents(runId: $runId, after: $after) {
      __typename
      seq
      runId
      at
      ... on RunStatusEvent { status errorCode errorMessage }
      ... on TokenEvent { text messageId node }
      ... on ToolCallEvent { toolCallId name args }
      ... on ToolResultEvent { toolCallId name content isError }
      ... on ReplayGapEvent { fromSeq toSeq }
    }
  }
`;

export const START_RUN = /* GraphQL */ `
  mutation Start($conversationId: ID, $message: String!) {
    startRun(input: { conversationId: $conversationId, message: $message }) {
      __typename
      ... on StartRunSuccess { run { id status kind input startedAt } conversation { id title createdAt updatedAt } }
      ... on Error { code message }
      ... on ValidationError { field }
      ... on RunInProgressError { activeRunId }
    }
  }
`;

export const RESUME_RUN = /* GraphQL */ `
  mutation Resume($conversationId: ID!) {
    resumeRun(input: { conversationId: $conversationId }) {
      __typename
      ... on ResumeRunSuccess { run { id status kind input } }
      ... on Error { code message }
    }
  }
`;

export const RUN = /* GraphQL */ `
  query Run($id: ID!) {
    run(id: $id) { id kind status input errorCode errorMessage partialOutput startedAt finishedAt conversation { id } }
  }
`;

export const CONVERSATION = /* GraphQL */ `
  query Conversation($id: ID!) {
    conversation(id: $id) {
      id title messageCount next resumable createdAt updatedAt
      messages { id role content toolCalls { id name args } toolCallId name }
      activeRun { id }
      latestRun { id status }
      runs(first: 100) { totalCount edges { cursor node { id kind status errorCode errorMessage input startedAt finishedAt } } }
    }
  }
`;
