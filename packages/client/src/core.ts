// What a client's conversation stores share: its transport and storage, reads
// and mutations with their retries, and one conversationsChanged subscription
// for all of them.
import { CONVERSATIONS_CHANGED, type Document } from "./documents.js";
import type { RunledgerConversationsChangedSubscription, RunledgerRefusalFragment } from "./generated.js";
import { backoff } from "./network.js";
import type { ResumeStorage } from "./resume.js";
import type { LiveRun } from "./run-log.js";
import type { Scheduler } from "./schedule.js";
import { keepSubscribed } from "./stream.js";
import { TransportError, type GraphQLResult, type Transport } from "./transport.js";

/** Why an action did not happen. */
export interface ActionError {
  /**
   * The API's refusal code (RUN_IN_PROGRESS, VALIDATION, INTERRUPT_MISMATCH...),
   * a GraphQL error's (LIMIT_EXCEEDED...), or NETWORK (no answer, after the
   * retries) and UNAUTHORIZED (the credential was refused).
   */
  code: string;
  message: string;
  /** The refusal as the API typed it (its __typename and own fields), when it is one. */
  refusal?: RunledgerRefusalFragment;
}

export type Result<T> = { ok: true; value: T } | { ok: false; error: ActionError };

/** A mutation result union's success member: the one without a code. */
export type Success<R> = Exclude<R, { code: unknown }>;

type Notice = RunledgerConversationsChangedSubscription["conversationsChanged"];

export interface NoticeListener {
  notice(row: Notice): void;
  /** The notices were subscribed again: what changed meanwhile was not told. */
  restarted(): void;
}

/** What the core holds while it is attached: a store to write before a page unloads and to close with the client; a conversation store also answers for the runs it follows. */
export interface HeldStore {
  flush(): void;
  close(): void;
  /** A conversation store: the run as it follows it, with its conversation, if it does. */
  knownRun?(runId: string): { live: LiveRun; conversationId: string | null } | null;
}

export interface CoreOptions {
  transport: Transport;
  storage: ResumeStorage;
  retries: number;
  persistMs: number;
  queuePollMs: number;
  schedule: Scheduler;
}

export class ClientCore {
  readonly transport: Transport;
  readonly storage: ResumeStorage;
  readonly persistMs: number;
  readonly queuePollMs: number;
  readonly schedule: Scheduler;
  readonly #retries: number;
  readonly #noticeListeners = new Set<NoticeListener>();
  readonly #stores = new Set<HeldStore>();
  #stopNotices: (() => void) | null = null;
  #disposed = false;

  constructor(options: CoreOptions) {
    this.transport = options.transport;
    this.storage = options.storage;
    this.persistMs = options.persistMs;
    this.queuePollMs = options.queuePollMs;
    this.schedule = options.schedule;
    this.#retries = options.retries;
  }

  /** Sends the operation; a retryable failure (no answer, a 5xx) is sent again up to `retries` times, with backoff. */
  async #send<T>(query: string, variables: Record<string, unknown>, retries = this.#retries): Promise<GraphQLResult<T>> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.transport.request<T>({ query, variables });
      } catch (error) {
        if (!(error instanceof TransportError) || !error.retryable || attempt >= retries || this.#disposed) throw error;
        await new Promise((resolve) => setTimeout(resolve, backoff(attempt, 4_000)));
      }
    }
  }

  /** A read: its data, or an Error in words. */
  async query<T, V extends Record<string, unknown>>(document: Document<T, V>, variables: V): Promise<T> {
    const result = await this.#send<T>(document, variables);
    if (result.errors?.length) throw new Error(result.errors.map((e) => e.message).join("; "));
    if (!result.data) throw new Error("the server answered without data");
    return result.data;
  }

  /**
   * A mutation whose result (`field`) is a union of a success type and refusals
   * implementing Error: the success, or the refusal as answered. Every
   * mutation the client's stores send carries an idempotency key, so sending
   * it again after no answer is safe; `retry: false` sends an app's own once.
   */
  async mutate<T, V extends Record<string, unknown>, F extends keyof T>(
    document: Document<T, V>,
    variables: V,
    field: F,
    retry = true,
  ): Promise<Result<Success<T[F]>>> {
    let result: GraphQLResult<T>;
    try {
      result = await this.#send<T>(document, variables, retry ? this.#retries : 0);
    } catch (error) {
      const unauthorized = error instanceof TransportError && error.kind === "unauthorized";
      return { ok: false, error: { code: unauthorized ? "UNAUTHORIZED" : "NETWORK", message: (error as Error).message } };
    }
    if (result.errors?.length) {
      const code = result.errors[0]!.extensions?.code;
      return { ok: false, error: { code: typeof code === "string" ? code : "GRAPHQL_ERROR", message: result.errors.map((e) => e.message).join("; ") } };
    }
    const value = result.data?.[field] as (T[F] & { code?: unknown; message?: unknown }) | undefined;
    if (!value) return { ok: false, error: { code: "GRAPHQL_ERROR", message: "the server answered without a result" } };
    if (typeof value.code === "string") {
      return { ok: false, error: { code: value.code, message: String(value.message), refusal: value as unknown as RunledgerRefusalFragment } };
    }
    return { ok: true, value: value as Success<T[F]> };
  }

  /** Listens to conversationsChanged: one subscription for every store, open while one listens. */
  notices(listener: NoticeListener): () => void {
    this.#noticeListeners.add(listener);
    if (!this.#stopNotices && !this.#disposed) {
      this.#stopNotices = keepSubscribed(this.transport, CONVERSATIONS_CHANGED, () => ({}), {
        next: ({ conversationsChanged }) => {
          for (const l of [...this.#noticeListeners]) l.notice(conversationsChanged);
        },
        ended: () => true,
        restarted: () => {
          for (const l of [...this.#noticeListeners]) l.restarted();
        },
      });
    }
    return () => {
      this.#noticeListeners.delete(listener);
      if (this.#noticeListeners.size === 0) {
        this.#stopNotices?.();
        this.#stopNotices = null;
      }
    };
  }

  adopt(store: HeldStore): void {
    this.#stores.add(store);
  }

  forget(store: object): void {
    this.#stores.delete(store as HeldStore);
  }

  /** An attached store of this client that follows the run (the one that learned of it first), or null. */
  storeOf(runId: string): HeldStore | null {
    for (const store of this.#stores) if (store.knownRun?.(runId)) return store;
    return null;
  }

  flushAll(): void {
    for (const store of this.#stores) store.flush();
  }

  async dispose(): Promise<void> {
    this.#disposed = true;
    for (const store of [...this.#stores]) store.close();
    this.#stopNotices?.();
    this.#stopNotices = null;
    await this.transport.dispose();
  }
}

/** Each client's core, for what is made on a client outside it (createCheckpointList, createRunStore), so that an app that does not use it does not bundle it. */
const cores = new WeakMap<object, ClientCore>();

export function registerCore(client: object, core: ClientCore): void {
  cores.set(client, core);
}

export function coreOf(client: object): ClientCore {
  const core = cores.get(client);
  if (!core) throw new Error("not a client made by createRunledgerClient");
  return core;
}
