// The GraphQL documents a conversation store sends, and the fragments every
// document shares; the lists' and the branching mutations' are in
// extra-documents.ts. The types of what they select are generated from both
// files and schema.graphql into generated.ts (`npm run codegen` in the repository).
import type * as Types from "./generated.js";

/** A document's text, marked with the types of its result and its variables (phantom: nothing at run time). */
export type Document<Result, Variables> = string & { readonly __result?: Result; readonly __variables?: Variables };

export const MESSAGE = /* GraphQL */ `
  fragment RunledgerMessage on Message { id role content toolCalls { id name args } toolCallId name }
`;

export const RUN = /* GraphQL */ `
  fragment RunledgerRun on Run {
    id kind status input errorCode errorMessage partialOutput queuePosition queueReason startedAt finishedAt
  }
`;

const INTERRUPT = /* GraphQL */ `
  fragment RunledgerInterrupt on Interrupt { id node value state run { id } }
`;

export const REFUSAL = /* GraphQL */ `
  fragment RunledgerRefusal on Error {
    __typename code message
    ... on RunInProgressError { activeRunId }
    ... on QuotaExceededError { retryAfterSeconds }
    ... on InterruptMismatchError { pendingInterruptIds }
    ... on ValidationError { field }
  }
`;

/** A conversation as a store starts from: its thread, its runs in progress or last ended, what it waits for. */
export const CONVERSATION: Document<Types.RunledgerConversationQuery, Types.RunledgerConversationQueryVariables> = /* GraphQL */ `
  query RunledgerConversation($id: ID!) {
    conversation(id: $id) {
      id title agentName expiresAt next resumable
      messages { ...RunledgerMessage }
      activeRun { ...RunledgerRun messages { id role } }
      latestRun { ...RunledgerRun }
      pendingInterrupts { ...RunledgerInterrupt }
    }
  }
  ${MESSAGE}
  ${RUN}
  ${INTERRUPT}
`;

/** One run as stored: its status (and place in the queue) and the messages it added, which refill a gap. */
export const RUN_RECORD: Document<Types.RunledgerRunRecordQuery, Types.RunledgerRunRecordQueryVariables> = /* GraphQL */ `
  query RunledgerRunRecord($id: ID!) {
    run(id: $id) { ...RunledgerRun conversation { id } messages { ...RunledgerMessage } }
  }
  ${RUN}
  ${MESSAGE}
`;

export const RUN_EVENTS: Document<Types.RunledgerRunEventsSubscription, Types.RunledgerRunEventsSubscriptionVariables> = /* GraphQL */ `
  subscription RunledgerRunEvents($runId: ID!, $after: Int) {
    runEvents(runId: $runId, after: $after) {
      __typename seq runId at
      ... on RunStatusEvent { status errorCode errorMessage }
      ... on TokenEvent { text messageId node }
      ... on ToolCallEvent { toolCallId name args attempt }
      ... on ToolResultEvent { toolCallId name content isError attempt }
      ... on CheckpointEvent { checkpointId }
      ... on CustomEvent { name data }
      ... on InterruptEvent { interrupt { ...RunledgerInterrupt } }
      ... on ReplayGapEvent { fromSeq toSeq }
    }
  }
  ${INTERRUPT}
`;

export const CONVERSATION_ROW = /* GraphQL */ `
  fragment RunledgerConversationRow on Conversation {
    id title agentName owner createdAt updatedAt messageCount expiresAt
    activeRun { id status startedAt }
    latestRun { id status kind errorCode }
    forkedFrom { conversation { id title } }
  }
`;

/**
 * What tells a store that a run of its conversation started or ended, wherever
 * it was started, and a list that a conversation was made, changed or deleted.
 * The server sends each caller only the conversations it may see.
 */
export const CONVERSATIONS_CHANGED: Document<Types.RunledgerConversationsChangedSubscription, Types.RunledgerConversationsChangedSubscriptionVariables> =
  /* GraphQL */ `
  subscription RunledgerConversationsChanged {
    conversationsChanged { ...RunledgerConversationRow deleted }
  }
  ${CONVERSATION_ROW}
`;

export const START_RUN: Document<Types.RunledgerStartRunMutation, Types.RunledgerStartRunMutationVariables> = /* GraphQL */ `
  mutation RunledgerStartRun($input: StartRunInput!) {
    startRun(input: $input) {
      __typename
      ... on StartRunSuccess { run { ...RunledgerRun } conversation { id title } }
      ...RunledgerRefusal
    }
  }
  ${RUN}
  ${REFUSAL}
`;

export const RESUME_RUN: Document<Types.RunledgerResumeRunMutation, Types.RunledgerResumeRunMutationVariables> = /* GraphQL */ `
  mutation RunledgerResumeRun($input: ResumeRunInput!) {
    resumeRun(input: $input) {
      __typename
      ... on ResumeRunSuccess { run { ...RunledgerRun } }
      ...RunledgerRefusal
    }
  }
  ${RUN}
  ${REFUSAL}
`;

export const CANCEL_RUN: Document<Types.RunledgerCancelRunMutation, Types.RunledgerCancelRunMutationVariables> = /* GraphQL */ `
  mutation RunledgerCancelRun($input: CancelRunInput!) {
    cancelRun(input: $input) {
      __typename
      ... on CancelRunSuccess { run { ...RunledgerRun } }
      ...RunledgerRefusal
    }
  }
  ${RUN}
  ${REFUSAL}
`;
