// What resolvers may use: the services, nothing below them. A fresh context per
// GraphQL operation holds that operation's caches.
import type { PrismaClient } from "./db/prisma.ts";
import type { AgentRuntime, ThreadState } from "./agent/runtime.ts";
import type { EventBus } from "./events/bus.ts";
import type { RunService } from "./runs/service.ts";
import type { RunStore } from "./runs/store.ts";
import type { ConversationService } from "./runs/conversations.ts";
import type { CheckpointReadModel } from "./read/checkpoints.ts";
import type { ConversationListReadModel } from "./read/conversation-list.ts";
import { checkpointScopes, type CheckpointReadScope } from "./read/checkpoints-scope.ts";

export interface Services {
  /** Read access for the Prisma plugin's object types and connections. */
  prisma: PrismaClient;
  runs: RunService;
  conversations: ConversationService;
  store: RunStore;
  agent: AgentRuntime;
  bus: EventBus;
  /** LangGraph's checkpoints and writes, read for the API (the correlation read model). */
  checkpointReads: CheckpointReadModel;
  /** The `conversations` page and total. */
  conversationList: ConversationListReadModel;
}

export interface Context extends Services {
  /** The thread's latest state, read at most once per conversation per operation. */
  thread(conversationId: string): Promise<ThreadState>;
  /** Forgets cached reads. A subscription is one operation with many events; it calls this before each event so each reads fresh state. */
  forgetReads(): void;
  /** Checkpoint loaders for one execution: pass `info.rootValue` (one scope per operation, or per subscription event). */
  checkpoints(execution: unknown): CheckpointReadScope;
}

export function createContext(services: Services): Context {
  const threads = new Map<string, Promise<ThreadState>>();
  return {
    ...services,
    checkpoints: checkpointScopes(services.checkpointReads, services.agent),
    thread(conversationId) {
      let state = threads.get(conversationId);
      if (!state) {
        state = services.agent.readThread(conversationId);
        threads.set(conversationId, state);
      }
      return state;
    },
    forgetReads() {
      threads.clear();
    },
  };
}
