// The hooks. Each makes its store without side effects while rendering (a
// render React throws away leaves nothing behind), attaches it when React
// subscribes (after the commit) and detaches it when React unsubscribes (an
// unmount, or a switch to another conversation): every subscription it held
// ends, and nothing it still receives reaches the view.
import { useCallback, useMemo, useState, useSyncExternalStore } from "react";
import { createCheckpointList, createConversationList, createRunStore } from "@runledger/client";
import type {
  CheckpointListSnapshot,
  CheckpointListStore,
  ConnectionState,
  ConversationListSnapshot,
  ConversationListStore,
  ConversationSnapshot,
  ConversationState,
  ConversationStore,
  PendingInterrupt,
  RunledgerClient,
  RunSnapshot,
  RunStore,
} from "@runledger/client";
import { useRunledgerClient } from "./context.js";

/**
 * What useConnection() shows on the server and in the render that hydrates
 * its markup: the same on both (the server's connection and the page's are
 * not the same one, and the page's may be up before it hydrates), so
 * hydration matches. `transport` is empty: not known yet.
 */
export const serverConnection: ConnectionState = Object.freeze({ status: "connecting", transport: "", reconnects: 0 });

const readServerConnection = (): ConnectionState => serverConnection;

/**
 * The connection's state: `connecting`, `connected`, `reconnecting`,
 * `unauthorized` or `offline`, with its transport and reconnects. On the
 * server and while hydrating it is `serverConnection` (`connecting`); the
 * live state follows at once after hydration.
 */
export function useConnection(): ConnectionState {
  const { connection } = useRunledgerClient();
  const subscribe = useCallback((listener: () => void) => connection.subscribe(listener), [connection]);
  const read = useCallback(() => connection.getSnapshot(), [connection]);
  return useSyncExternalStore(subscribe, read, readServerConnection);
}

/** What a conversation view can do; each is the store's own method, bound, and the same function for as long as the store is. */
export interface ConversationActions {
  /** Sends a message: shown at once, one run at most however often it is retried (the idempotency key is kept). */
  submit: ConversationStore["submit"];
  /** Sends an `unsent` message again with its first key; discard() drops it. */
  retry: ConversationStore["retry"];
  discard: ConversationStore["discard"];
  /** Cancels the run on the server. */
  stop: ConversationStore["stop"];
  /** Only stops listening (the run goes on); attach() listens again, rejoining after the last seq. */
  detach: ConversationStore["detach"];
  attach: ConversationStore["attach"];
  /** Answers the interrupt the thread waits on (typed for tool approvals and tools in doubt). */
  respond: ConversationStore["respond"];
  respondAll: ConversationStore["respondAll"];
  /** Continues the pending step. */
  resume: ConversationStore["resume"];
  /** Shows older stored messages, a page at a time (with `pageSize`); resolves with how many it added. */
  loadOlder: ConversationStore["loadOlder"];
  /** fork(checkpointId, {message?, open?, idempotencyKey?}): a new conversation from a checkpoint (the view shows it unless `open: false`, until the conversationId given changes). */
  fork: ConversationStore["fork"];
  /** edit({checkpointId, values | message, asNode?, idempotencyKey?}): writes at a checkpoint (an EDIT run); `message` replaces the user message it added. */
  edit: ConversationStore["edit"];
  /** Calls the listener with each run event as it is applied, in seq order, at most once. */
  onEvent: ConversationStore["onEvent"];
}

export interface ConversationView extends ConversationSnapshot, ConversationActions {
  /** The store behind the view (for its serialize(), or what the hooks do not wrap). */
  store: ConversationStore;
}

export interface UseConversationOptions {
  /**
   * The state a server render read (loadConversation) of this conversation: the
   * first render shows exactly it (hydration matches the server's markup), and
   * the live run is rejoined after its lastSeq, with no replay from the start.
   * Ignored for another conversation.
   */
  initial?: ConversationState | null;
  /**
   * Show the thread's newest `pageSize` stored messages at first, and older
   * ones with loadOlder() (`hasOlder`, `olderCount`). Default: the whole
   * thread. Read when the hook makes its store (a new conversation).
   */
  pageSize?: number;
}

interface Held<S> {
  client: RunledgerClient;
  key: string | null;
  store: S;
}

function actionsOf(store: ConversationStore): ConversationActions {
  return {
    submit: (message, options) => store.submit(message, options),
    retry: (messageId) => store.retry(messageId),
    discard: (messageId) => store.discard(messageId),
    stop: (runId) => store.stop(runId),
    detach: () => store.detach(),
    attach: () => store.attach(),
    respond: (value, options) => store.respond(value, options),
    respondAll: (responses, idempotencyKey) => store.respondAll(responses, idempotencyKey),
    resume: (idempotencyKey) => store.resume(idempotencyKey),
    loadOlder: (count) => store.loadOlder(count),
    fork: store.fork.bind(store),
    edit: store.edit.bind(store),
    onEvent: (listener) => store.onEvent(listener),
  };
}

/** Subscribes React to a store that listens to the server only while React does. */
function useAttached<T>(store: { subscribe(listener: () => void): () => void; getSnapshot(): T; attach(): void; detach(): void }): T {
  const subscribe = useCallback(
    (listener: () => void) => {
      const off = store.subscribe(listener);
      store.attach();
      return () => {
        off();
        store.detach();
      };
    },
    [store],
  );
  const read = useCallback(() => store.getSnapshot(), [store]);
  return useSyncExternalStore(subscribe, read, read);
}

/**
 * Follows one conversation (null: a new one, made by its first submit): its
 * messages, the newest run's status as the server reports it, what it waits
 * for, and the actions on it. It follows every run of the conversation,
 * wherever started. A new conversationId switches at once: the previous one's
 * subscriptions end, and the view shows only the new one (`phase: "loading"`
 * until read). Going from null to the id the first submit made keeps the
 * same store, so the stream goes on.
 */
export function useConversation(conversationId: string | null, options: UseConversationOptions = {}): ConversationView {
  const client = useRunledgerClient();
  const initial = options.initial && options.initial.conversationId === conversationId ? options.initial : undefined;
  const pageSize = options.pageSize;
  const make = (): Held<ConversationStore> => ({
    client,
    key: conversationId,
    store: initial ? client.hydrate(initial, { attach: false, pageSize }) : client.conversation(conversationId, { attach: false, pageSize }),
  });
  const [held, setHeld] = useState(make);
  let current = held;
  if (held.client !== client || (held.key !== conversationId && held.store.getSnapshot().conversationId !== conversationId)) {
    current = make();
    setHeld(current);
  } else if (held.key !== conversationId) {
    current = { ...held, key: conversationId };
    setHeld(current);
  }
  const { store } = current;
  const snapshot = useAttached(store);
  const actions = useMemo(() => actionsOf(store), [store]);
  return useMemo(() => ({ ...snapshot, ...actions, store }), [snapshot, actions, store]);
}

/** useConversations' filter (what createConversationList(client, filter) takes). */
export interface UseConversationsOptions {
  /** Rows per page (default 30). */
  pageSize?: number;
  /** An admin's list of one owner's conversations; a user's list is always their own. */
  owner?: string | null;
}

export interface ConversationListView extends ConversationListSnapshot {
  /** Reads the next page. */
  loadMore: () => Promise<void>;
  /** Reads the first page again. */
  refresh: () => Promise<void>;
  store: ConversationListStore;
}

/**
 * The caller's conversations, newest first, live: a conversation made, renamed,
 * deleted, or whose run starts or ends anywhere moves into place as the server
 * tells it (conversationsChanged, which sends each caller only what it may see).
 */
export function useConversations(filter: UseConversationsOptions = {}): ConversationListView {
  const options = filter;
  const client = useRunledgerClient();
  const owner = options.owner ?? null;
  const pageSize = options.pageSize ?? 30;
  const key = `${pageSize}:${owner ?? ""}`;
  const make = (): Held<ConversationListStore> => ({ client, key, store: createConversationList(client, { owner, pageSize, attach: false }) });
  const [held, setHeld] = useState(make);
  let current = held;
  if (held.client !== client || held.key !== key) {
    current = make();
    setHeld(current);
  }
  const { store } = current;
  const snapshot = useAttached(store);
  return useMemo(() => ({ ...snapshot, loadMore: () => store.loadMore(), refresh: () => store.refresh(), store }), [snapshot, store]);
}

export interface UseCheckpointsOptions {
  /** Checkpoints per page (default 20, at most 100). */
  pageSize?: number;
}

export interface CheckpointListView extends CheckpointListSnapshot {
  /** Reads the page before the oldest listed; resolves with how many it added. */
  loadOlder: () => Promise<number>;
  /** Reads the newest page again. */
  refresh: () => Promise<void>;
  store: CheckpointListStore;
}

/**
 * A conversation's checkpoints (to fork from, or to edit at), oldest first:
 * the newest page, older pages with loadOlder(), read again whenever a run of
 * the conversation starts or ends, or it is edited. null lists nothing
 * (`phase: "idle"`); another conversationId lists that one.
 */
export function useCheckpoints(conversationId: string | null, options: UseCheckpointsOptions = {}): CheckpointListView {
  const client = useRunledgerClient();
  const pageSize = options.pageSize ?? 20;
  const key = `${conversationId ?? ""}:${pageSize}`;
  const make = (): Held<CheckpointListStore> => ({ client, key, store: createCheckpointList(client, conversationId, { pageSize, attach: false }) });
  const [held, setHeld] = useState(make);
  let current = held;
  if (held.client !== client || held.key !== key) {
    current = make();
    setHeld(current);
  }
  const { store } = current;
  const snapshot = useAttached(store);
  return useMemo(() => ({ ...snapshot, loadOlder: () => store.loadOlder(), refresh: () => store.refresh(), store }), [snapshot, store]);
}

export interface RunView extends RunSnapshot {
  /** The store behind the view; null for useRun(null). */
  store: RunStore | null;
}

/**
 * One run by its id (null: none, `phase: "missing"`): its state as the server reports it (`run`:
 * status, error, queue place, lastSeq, gaps), what it streamed, what it asks,
 * its conversation. Shown as an attached conversation store of the client
 * follows it (a useConversation of its conversation: nothing more is sent,
 * `source: "conversation"`), else read with the run query and followed by
 * its events from its last seq (`source: "own"`).
 */
export function useRun(runId: string | null): RunView {
  const client = useRunledgerClient();
  const make = (): Held<RunStore | null> => ({ client, key: runId, store: runId ? createRunStore(client, runId, { attach: false }) : null });
  const [held, setHeld] = useState(make);
  let current = held;
  if (held.client !== client || held.key !== runId) {
    current = make();
    setHeld(current);
  }
  const store = current.store;
  const snapshot = useAttached(store ?? idleRunStore);
  return useMemo(() => ({ ...snapshot, store }), [snapshot, store]);
}

const idleRun: RunSnapshot = Object.freeze({
  runId: "",
  phase: "missing",
  run: null,
  conversationId: null,
  messages: [],
  interrupts: [],
  source: null,
  attached: false,
  error: null,
}) as RunSnapshot;

/** What useRun(null) reads: nothing, and nothing to attach. */
const idleRunStore = {
  getSnapshot: () => idleRun,
  subscribe: () => () => {},
  attach: () => {},
  detach: () => {},
};

export interface InterruptsView {
  /** What the conversation's WAITING thread asks (typed for tool approvals and tools in doubt); empty while a run is active or nothing waits. */
  interrupts: readonly PendingInterrupt[];
  /** Answers one (`interruptId` may be left out when one waits); the run that continues is followed. */
  respond: ConversationStore["respond"];
  /** Answers several at once. */
  respondAll: ConversationStore["respondAll"];
  /** `loading` until the conversation is read (see ConversationSnapshot.phase). */
  phase: ConversationSnapshot["phase"];
  store: ConversationStore;
}

/**
 * A conversation's pending interrupts and respond(): a store of its own on the
 * conversation (as useConversation makes), whose view renders only when what
 * waits changes, not as runs stream. In a component that has
 * useConversation(id) already, its `interrupts` and `respond` are the same.
 */
export function useInterrupts(conversationId: string | null): InterruptsView {
  const client = useRunledgerClient();
  const make = (): Held<ConversationStore> => ({ client, key: conversationId, store: client.conversation(conversationId, { attach: false }) });
  const [held, setHeld] = useState(make);
  let current = held;
  if (held.client !== client || held.key !== conversationId) {
    current = make();
    setHeld(current);
  }
  const { store } = current;
  const subscribe = useCallback(
    (listener: () => void) => {
      const off = store.subscribe(listener);
      store.attach();
      return () => {
        off();
        store.detach();
      };
    },
    [store],
  );
  const readInterrupts = useCallback(() => store.getSnapshot().interrupts, [store]);
  const readPhase = useCallback(() => store.getSnapshot().phase, [store]);
  const interrupts = useSyncExternalStore(subscribe, readInterrupts, readInterrupts);
  const phase = useSyncExternalStore(subscribe, readPhase, readPhase);
  return useMemo(
    () => ({ interrupts, phase, respond: store.respond.bind(store), respondAll: store.respondAll.bind(store), store }),
    [interrupts, phase, store],
  );
}
