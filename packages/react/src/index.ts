// @runledger/react: React hooks on @runledger/client's stores, through
// useSyncExternalStore (React 18 and later, and Preact through preact/compat).
// Every hook reads an immutable snapshot; a store tells of streamed changes at
// most once per animation frame, and unchanged messages keep their objects, so
// a row memoized on its message renders only when that message changed.
export { RunledgerProvider, useRunledgerClient, type RunledgerProviderProps } from "./context.js";
export {
  serverConnection,
  useCheckpoints,
  useConnection,
  useConversation,
  useConversations,
  useInterrupts,
  useRun,
  type CheckpointListView,
  type InterruptsView,
  type RunView,
  type ConversationActions,
  type ConversationListView,
  type ConversationView,
  type UseConversationOptions,
  type UseCheckpointsOptions,
  type UseConversationsOptions,
} from "./hooks.js";
// The core's types, so an app that uses the hooks imports them from one place.
export type {
  ActionError,
  AnswerTo,
  ChatMessage,
  CheckpointListSnapshot,
  CheckpointRow,
  CheckpointSource,
  ConnectionState,
  ConnectionStatus,
  ConversationInfo,
  ConversationListSnapshot,
  ConversationRow,
  EditInput,
  ForkOptions,
  ConversationSnapshot,
  ConversationState,
  Gap,
  MessageState,
  PendingInterrupt,
  Result,
  RunEvent,
  RunledgerClient,
  RunSnapshot,
  RunState,
  RunStatus,
  SubmitOptions,
  RespondOptions,
  ToolCall,
} from "@runledger/client";
