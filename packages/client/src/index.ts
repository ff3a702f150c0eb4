// @runledger/client: a framework-free client for runledger.
export { createRunledgerClient, type RunledgerClient, type RunledgerClientOptions } from "./client.js";
export {
  ConversationStore,
  type ConversationInfo,
  type ConversationOptions,
  type EditInput,
  type ForkOptions,
  type ConversationSnapshot,
  type ConversationState,
  type RespondOptions,
  type SubmitOptions,
} from "./conversation.js";
export {
  createConversationList,
  ConversationListStore,
  type ConversationList,
  type ConversationListOptions,
  type ConversationListSnapshot,
  type ConversationRow,
} from "./conversation-list.js";
export { createCheckpointList, CheckpointListStore, type CheckpointListOptions, type CheckpointListSnapshot, type CheckpointRow } from "./checkpoint-list.js";
export { followRunEvents, type RunEventBase, type RunEventsDocument, type RunEventsEnd, type RunEventsOptions } from "./run-events.js";
export type { StreamEnd, StreamHandlers } from "./stream.js";
export type { Document } from "./documents.js";
export { createRunStore, RunStore, type RunSnapshot, type RunStoreOptions } from "./run-store.js";
export { loadConversation, type ConversationSource, type LoadOptions } from "./ssr.js";
export { frameScheduler, microtaskScheduler, syncScheduler, type Scheduler } from "./schedule.js";
export type { ActionError, Result, Success } from "./core.js";
export type { Readable } from "./observable.js";
export type { ChatMessage, CustomItem, Gap, LiveRun, MessageState, RunEvent, RunState, ToolCall } from "./run-log.js";
export { toPendingInterrupt } from "./interrupts.js";
export type {
  AnswerTo,
  InterruptAnswer,
  PendingInterrupt,
  ToolApprovalAnswer,
  ToolApprovalRequest,
  ToolDecision,
  ToolInDoubtAnswer,
  ToolInDoubtRequest,
} from "./interrupts.js";
export { defaultStorage, memoryStorage, type ResumePoint, type ResumeStorage } from "./resume.js";
export {
  TransportError,
  type ConnectionState,
  type ConnectionStatus,
  type CredentialProvider,
  type GraphQLErrorLike,
  type GraphQLResult,
  type Operation,
  type Sink,
  type Transport,
} from "./transport.js";
export { createWebSocketTransport, type WebSocketTransportOptions } from "./websocket.js";
export { createSseTransport, type SseTransportOptions } from "./sse.js";
export { createAutoTransport, type AutoTransportOptions } from "./fallback.js";
export type { CheckpointSource, JsonValue, Multitask, QueueReason, RunErrorCode, RunKind, RunStatus, MessageRole } from "./generated.js";
