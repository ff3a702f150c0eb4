/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type ErrorCode =
  | 'IDEMPOTENCY_KEY_REUSED'
  | 'INTERRUPT_MISMATCH'
  | 'NOTHING_TO_RESUME'
  | 'NOT_FOUND'
  | 'QUOTA_EXCEEDED'
  | 'RUN_IN_PROGRESS'
  | 'RUN_NOT_ACTIVE'
  | 'VALIDATION';

export type MessageRole =
  | 'ASSISTANT'
  | 'TOOL'
  | 'USER';

export type RunErrorCode =
  /** Anything else; errorMessage has the original text. */
  | 'AGENT_FAILURE'
  /** cancelRun stopped it. */
  | 'CANCELLED'
  /** The server stopped or crashed while it ran. */
  | 'INTERRUPTED'
  /** Ollama reported an error. */
  | 'MODEL_ERROR'
  /** Ollama answered that the model is not pulled. */
  | 'MODEL_NOT_FOUND'
  /** The model sent nothing for MODEL_IDLE_TIMEOUT_MS. */
  | 'MODEL_TIMEOUT'
  /** Ollama could not be reached: connection refused, reset, DNS. */
  | 'MODEL_UNAVAILABLE'
  /** The agent took more steps than AGENT_RECURSION_LIMIT. */
  | 'RECURSION_LIMIT';

export type RunStatus =
  | 'CANCELLED'
  | 'COMPLETED'
  | 'FAILED'
  | 'INTERRUPTED'
  /** Waiting its turn: its model endpoint is at MODEL_CONCURRENCY, no instance has room (MAX_ACTIVE_RUNS), it waits behind the conversation's active run, or the model turned its call away (503) and it waits to send it again (a RUNNING run can become QUEUED again this way). See queuePosition and queueReason. */
  | 'QUEUED'
  | 'RUNNING'
  /** Paused on an interrupt until a person answers it (resumeRun with responses). */
  | 'WAITING';

export type StartRunMutationVariables = Exact<{
  message: string;
  conversationId?: string | number | null | undefined;
}>;


export type StartRunMutation = { startRun:
    | { __typename: 'IdempotencyKeyReusedError', code: ErrorCode, message: string }
    | { __typename: 'NotFoundError', code: ErrorCode, message: string }
    | { __typename: 'QuotaExceededError', code: ErrorCode, message: string }
    | { __typename: 'RunInProgressError', code: ErrorCode, message: string }
    | { __typename: 'StartRunSuccess', run: { id: string, status: RunStatus, startedAt: string }, conversation: { id: string, title: string } }
    | { __typename: 'ValidationError', code: ErrorCode, message: string }
   };

export type FollowRunSubscriptionVariables = Exact<{
  runId: string | number;
}>;


export type FollowRunSubscription = { runEvents:
    | { __typename: 'CheckpointEvent', seq: number, at: string }
    | { __typename: 'CustomEvent', seq: number, at: string }
    | { __typename: 'InterruptEvent', seq: number, at: string }
    | { __typename: 'ReplayGapEvent', seq: number, at: string }
    | { __typename: 'RunStatusEvent', status: RunStatus, errorCode: RunErrorCode | null, seq: number, at: string }
    | { __typename: 'TokenEvent', text: string, seq: number, at: string }
    | { __typename: 'ToolCallEvent', name: string, args: JsonValue, seq: number, at: string }
    | { __typename: 'ToolResultEvent', seq: number, at: string }
   };

export type ConversationQueryVariables = Exact<{
  id: string | number;
}>;


export type ConversationQuery = { conversation: { id: string, title: string, createdAt: string, updatedAt: string, runs: { edges: Array<{ node: { id: string, status: RunStatus, startedAt: string, finishedAt: string | null } }> }, messages: Array<{ role: MessageRole, content: string, toolCalls: Array<{ name: string, args: JsonValue }> }> } | null };


export const StartRunDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"StartRun"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"message"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"conversationId"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"ID"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"startRun"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"input"},"value":{"kind":"ObjectValue","fields":[{"kind":"ObjectField","name":{"kind":"Name","value":"message"},"value":{"kind":"Variable","name":{"kind":"Name","value":"message"}}},{"kind":"ObjectField","name":{"kind":"Name","value":"conversationId"},"value":{"kind":"Variable","name":{"kind":"Name","value":"conversationId"}}}]}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"StartRunSuccess"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"run"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"status"}},{"kind":"Field","name":{"kind":"Name","value":"startedAt"}}]}},{"kind":"Field","name":{"kind":"Name","value":"conversation"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"title"}}]}}]}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"Error"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"code"}},{"kind":"Field","name":{"kind":"Name","value":"message"}}]}}]}}]}}]} as unknown as DocumentNode<StartRunMutation, StartRunMutationVariables>;
export const FollowRunDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"subscription","name":{"kind":"Name","value":"FollowRun"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"runId"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"ID"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"runEvents"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"runId"},"value":{"kind":"Variable","name":{"kind":"Name","value":"runId"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"__typename"}},{"kind":"Field","name":{"kind":"Name","value":"seq"}},{"kind":"Field","name":{"kind":"Name","value":"at"}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"TokenEvent"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"text"}}]}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"ToolCallEvent"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"args"}}]}},{"kind":"InlineFragment","typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"RunStatusEvent"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"status"}},{"kind":"Field","name":{"kind":"Name","value":"errorCode"}}]}}]}}]}}]} as unknown as DocumentNode<FollowRunSubscription, FollowRunSubscriptionVariables>;
export const ConversationDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"Conversation"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"id"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"ID"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"conversation"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"id"},"value":{"kind":"Variable","name":{"kind":"Name","value":"id"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"title"}},{"kind":"Field","name":{"kind":"Name","value":"createdAt"}},{"kind":"Field","name":{"kind":"Name","value":"updatedAt"}},{"kind":"Field","name":{"kind":"Name","value":"runs"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"first"},"value":{"kind":"IntValue","value":"20"}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"edges"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"node"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"status"}},{"kind":"Field","name":{"kind":"Name","value":"startedAt"}},{"kind":"Field","name":{"kind":"Name","value":"finishedAt"}}]}}]}}]}},{"kind":"Field","name":{"kind":"Name","value":"messages"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"role"}},{"kind":"Field","name":{"kind":"Name","value":"content"}},{"kind":"Field","name":{"kind":"Name","value":"toolCalls"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"args"}}]}}]}}]}}]}}]} as unknown as DocumentNode<ConversationQuery, ConversationQueryVariables>;