// The GraphQL documents the specs and the benchmark send, in one place. A
// document that only one spec sends stays in that spec.

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

/** A start with the agent named (a new conversation's; an existing one keeps its own). */
export const START_AGENT_RUN = /* GraphQL */ `
  mutation StartAgentRun($message: String!, $agent: String, $conversationId: ID) {
    startRun(input: { message: $message, agent: $agent, conversationId: $conversationId }) {
      __typename
      ... on StartRunSuccess { run { id } conversation { id } }
      ... on Error { code message }
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

export const CANCEL_RUN = /* GraphQL */ `
  mutation Cancel($runId: ID!) {
    cancelRun(input: { runId: $runId }) {
      __typename
      ... on CancelRunSuccess { run { id status errorCode errorMessage partialOutput finishedAt } }
      ... on Error { code message }
      ... on ValidationError { field }
      ... on NotFoundError { entity entityId }
      ... on RunNotActiveError { runId }
    }
  }
`;

export const RUN = /* GraphQL */ `
  query Run($id: ID!) {
    run(id: $id) { id kind status input errorCode errorMessage partialOutput startedAt finishedAt conversation { id } }
  }
`;

/** A run's status alone: cheap to poll while the server's CPU is being measured. */
export const RUN_STATUS = /* GraphQL */ `
  query RunStatus($id: ID!) {
    run(id: $id) { status }
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

/** Every event of a run, with every field. */
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

/**
 * What a chat client asks for while a run streams: tokens and status changes.
 * The benchmark subscribes with this one, since every field selected costs the
 * server on every token to every subscriber.
 */
export const RUN_TOKENS = /* GraphQL */ `
  subscription RunTokens($runId: ID!) {
    runEvents(runId: $runId) {
      __typename
      seq
      at
      ... on TokenEvent { text messageId }
      ... on RunStatusEvent { status errorCode errorMessage }
    }
  }
`;

export const CONVERSATION_EVENTS = /* GraphQL */ `
  subscription ConversationEvents($conversationId: ID!) {
    conversationEvents(conversationId: $conversationId) {
      __typename
      seq
      runId
      ... on RunStatusEvent { status errorCode }
      ... on TokenEvent { text }
    }
  }
`;

export const CONVERSATIONS_CHANGED = /* GraphQL */ `
  subscription ConversationsChanged {
    conversationsChanged { id title deleted messageCount updatedAt activeRun { id status } latestRun { id status } }
  }
`;

/** A list-style selection: only the row's own fields, which a deletion notice can answer too. */
export const CONVERSATIONS_CHANGED_ROW = /* GraphQL */ `
  subscription ConversationsChangedRow {
    conversationsChanged { id title deleted messageCount updatedAt }
  }
`;
