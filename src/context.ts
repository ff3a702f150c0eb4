// What resolvers may use: the services and the storage seams they read through,
// nothing else. A fresh context per GraphQL operation holds that operation's
// read scopes.
import type { AgentRuntime } from "./agent/runtime.ts";
import type { RunService } from "./runs/service.ts";
import type { ConversationService } from "./runs/conversations.ts";
import type { ScheduleService } from "./schedules/service.ts";
import type { ConversationExpiry } from "./retention/expiry.ts";
import type { ExpiryPolicy } from "./storage/retention/types.ts";
import type { RunStore } from "./storage/run-store/types.ts";
import type { ConversationList } from "./storage/conversation-list/types.ts";
import type { CheckpointReads } from "./storage/checkpoint-reads/types.ts";
import type { ToolJournal } from "./storage/tool-journal/types.ts";
import type { RunEventStore } from "./storage/run-events/types.ts";
import type { WebhookStore } from "./storage/webhooks/types.ts";
import type { ScheduleStore } from "./storage/schedules/types.ts";
import type { EventBus } from "./storage/event-bus/types.ts";
import { readScopes, type ReadScope } from "./read/scope.ts";
import type { Principal } from "./domain/principal.ts";

export interface Services {
  runs: RunService;
  conversations: ConversationService;
  /** Cron schedules that start runs (docs/schedules.md). */
  schedules: ScheduleService;
  /** setConversationExpiry (docs/retention.md). */
  expiry: ConversationExpiry;
  /** The idle days each agent's conversations have, for Conversation.expiresAt. */
  retentionPolicy: ExpiryPolicy;
  agent: AgentRuntime;
  bus: EventBus;
  /** For subscriptions, which look a run up outside any execution; executions read through reads(). */
  store: RunStore;
  conversationList: ConversationList;
  checkpointReads: CheckpointReads;
  toolJournal: ToolJournal;
  runEvents: RunEventStore;
  /** The schedules seam, for Run.schedule read in batches. */
  scheduleStore: ScheduleStore;
  /** The webhook outbox, for Run.webhookDeliveries. */
  webhooks: WebhookStore;
}

export interface Context extends Services {
  /** Who sent the operation: every read and write is scoped to it. */
  principal: Principal;
  /** The reads of one execution (batched, cached): pass `info.rootValue` (the operation, or one subscription event). */
  reads(execution: unknown): ReadScope;
}

export function createContext(services: Services, principal: Principal): Context {
  return {
    ...services,
    principal,
    reads: readScopes(
      {
        runs: services.store,
        conversationList: services.conversationList,
        checkpointReads: services.checkpointReads,
        toolJournal: services.toolJournal,
        runEvents: services.runEvents,
        webhooks: services.webhooks,
        schedules: services.scheduleStore,
        states: services.agent,
      },
      principal,
    ),
  };
}
