// Every GraphQL document the console sends, in one place, so the console's use
// of the contract (schema.graphql) can be read at a glance. The types of what
// they select are generated from them (generated.ts, `npm run codegen`); a
// fragment gives its selection a type of its own (ConsoleRunFragment...).
import type * as Types from "./generated.ts";

/** A document's text, marked with the types of its result and its variables (phantom: nothing at run time). */
export type Document<Result, Variables> = string & { readonly __result?: Result; readonly __variables?: Variables };

const MESSAGE_FIELDS = /* GraphQL */ `
  fragment ConsoleMessage on Message { id role content toolCalls { id name args } toolCallId name }
`;

// An interrupt's run and answering run are named by id alone: the console has the runs.
const INTERRUPT_FIELDS = /* GraphQL */ `
  fragment ConsoleInterrupt on Interrupt { id node value state createdAt answer answeredAt answeredBy { id } run { id } }
`;

const USAGE_FIELDS = /* GraphQL */ `
  fragment ConsoleUsage on Usage { inputTokens outputTokens modelCalls modelDurationMs }
`;

const CHECKPOINT_FIELDS = /* GraphQL */ `
  fragment ConsoleCheckpoint on Checkpoint { id step source next createdAt messageCount run { id } lastMessage { id role content } }
`;

const AGENT_FIELDS = /* GraphQL */ `
  fragment ConsoleAgent on Agent { name description kind model tools { name description source requiresApproval } }
`;

const RUN_FIELDS = /* GraphQL */ `
  fragment ConsoleRun on Run {
    id kind status input errorCode errorMessage partialOutput startedAt finishedAt queuePosition queueReason
    usage { inputTokens outputTokens modelCalls modelDurationMs timeToFirstTokenMs }
    interrupts { ...ConsoleInterrupt }
    startCheckpoint { id step }
    messages { ...ConsoleMessage }
    failedTasks { taskId node message checkpoint { id step } }
    customEvents { __typename seq runId at name data }
    messageNodes { messageId node seq }
  }
`;

/** Who the credential stands for: the header shows it, and an admin sees each conversation's owner. */
export const ME: Document<Types.ConsoleMeQuery, Types.ConsoleMeQueryVariables> = /* GraphQL */ `
  query ConsoleMe {
    me { id role }
  }
`;

export const AGENTS: Document<Types.ConsoleAgentsQuery, Types.ConsoleAgentsQueryVariables> = /* GraphQL */ `
  query ConsoleAgents {
    agents { ...ConsoleAgent }
  }
  ${AGENT_FIELDS}
`;

// Page sizes are variables: a literal one would multiply the operation's cost estimate.
export const CONVERSATION: Document<Types.ConsoleConversationQuery, Types.ConsoleConversationQueryVariables> = /* GraphQL */ `
  query ConsoleConversation($id: ID!, $runs: Int!, $checkpoints: Int!) {
    conversation(id: $id) {
      id title owner createdAt updatedAt messageCount next resumable
      agentName agent { ...ConsoleAgent }
      forkedFrom { conversation { id title } checkpoint { id step } }
      usage { ...ConsoleUsage }
      pendingInterrupts { ...ConsoleInterrupt }
      messages { ...ConsoleMessage }
      activeRun { id }
      runs(last: $runs) {
        totalCount
        edges { node { ...ConsoleRun } }
      }
      checkpoints(last: $checkpoints) {
        pageInfo { hasPreviousPage }
        edges { node { ...ConsoleCheckpoint } }
      }
    }
  }
  ${AGENT_FIELDS}
  ${RUN_FIELDS}
  ${MESSAGE_FIELDS}
  ${CHECKPOINT_FIELDS}
  ${INTERRUPT_FIELDS}
  ${USAGE_FIELDS}
`;

export const RUN_EVENTS: Document<Types.ConsoleRunEventsSubscription, Types.ConsoleRunEventsSubscriptionVariables> = /* GraphQL */ `
  subscription ConsoleRunEvents($runId: ID!, $after: Int) {
    runEvents(runId: $runId, after: $after) {
      __typename seq runId at
      ... on RunStatusEvent { status errorCode errorMessage }
      ... on TokenEvent { text messageId node }
      ... on ToolCallEvent { toolCallId name args }
      ... on ToolResultEvent { toolCallId name content isError }
      ... on CheckpointEvent { checkpoint { ...ConsoleCheckpoint } }
      ... on ReplayGapEvent { fromSeq toSeq }
      ... on CustomEvent { name data }
      ... on InterruptEvent { interrupt { ...ConsoleInterrupt } }
    }
  }
  ${CHECKPOINT_FIELDS}
  ${INTERRUPT_FIELDS}
`;

// Each mutation asks for the refusal's code and message (... on Error): the
// console shows them as they come.
export const START_RUN: Document<Types.ConsoleStartRunMutation, Types.ConsoleStartRunMutationVariables> = /* GraphQL */ `
  mutation ConsoleStartRun($conversationId: ID, $message: String!, $agent: String, $multitask: Multitask) {
    startRun(input: { conversationId: $conversationId, message: $message, agent: $agent, multitask: $multitask }) {
      __typename
      ... on StartRunSuccess { run { id status kind input startedAt } conversation { id title } }
      ... on Error { code message }
    }
  }
`;

export const RESUME_RUN: Document<Types.ConsoleResumeRunMutation, Types.ConsoleResumeRunMutationVariables> = /* GraphQL */ `
  mutation ConsoleResumeRun($conversationId: ID!, $responses: [InterruptResponseInput!]) {
    resumeRun(input: { conversationId: $conversationId, responses: $responses }) {
      __typename
      ... on ResumeRunSuccess { run { id status kind input startedAt } }
      ... on Error { code message }
    }
  }
`;

export const FORK_CONVERSATION: Document<Types.ConsoleForkConversationMutation, Types.ConsoleForkConversationMutationVariables> = /* GraphQL */ `
  mutation ConsoleForkConversation($checkpointId: ID!, $message: String) {
    forkConversation(input: { checkpointId: $checkpointId, message: $message }) {
      __typename
      ... on ForkConversationSuccess { conversation { id title } run { id status kind input startedAt } }
      ... on Error { code message }
    }
  }
`;

export const CANCEL_RUN: Document<Types.ConsoleCancelRunMutation, Types.ConsoleCancelRunMutationVariables> = /* GraphQL */ `
  mutation ConsoleCancelRun($runId: ID!) {
    cancelRun(input: { runId: $runId }) {
      __typename
      ... on CancelRunSuccess { run { id status } }
      ... on Error { code message }
    }
  }
`;

export const RENAME_CONVERSATION: Document<Types.ConsoleRenameConversationMutation, Types.ConsoleRenameConversationMutationVariables> = /* GraphQL */ `
  mutation ConsoleRenameConversation($conversationId: ID!, $title: String!) {
    renameConversation(input: { conversationId: $conversationId, title: $title }) {
      __typename
      ... on RenameConversationSuccess { conversation { id title updatedAt } }
      ... on Error { code message }
    }
  }
`;

export const DELETE_CONVERSATION: Document<Types.ConsoleDeleteConversationMutation, Types.ConsoleDeleteConversationMutationVariables> = /* GraphQL */ `
  mutation ConsoleDeleteConversation($conversationId: ID!) {
    deleteConversation(input: { conversationId: $conversationId }) {
      __typename
      ... on DeleteConversationSuccess { conversationId }
      ... on Error { code message }
    }
  }
`;
