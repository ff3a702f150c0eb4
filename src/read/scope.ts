// What one GraphQL execution reads: every row it needs, through the storage
// seams, batched and cached for that execution only (DataLoader). An execution
// is one query or mutation, or one event of a subscription, so a long
// subscription never reads stale caches. The export route uses a scope too.
//
// A scope reads for one principal: a conversation it may not see (another user's)
// is missing here, and with it every run, checkpoint and event of it, since each
// is reached through its conversation or checked against it. The services check
// the same rule (canSee) for every write.
//
// The correlation is drawn here once per conversation asked for: its
// checkpoints and failed tasks are read first, then its runs. In that order the
// two reads agree without a shared transaction: a checkpoint is written after
// the row of the run that writes it (whose start mark precedes it), and a run's
// window only ever closes, after its last checkpoint.
import type { WebhookDeliveryRecord } from "../domain/webhooks.ts";
import type { WebhookStore } from "../storage/webhooks/types.ts";
import type { ScheduleRecord, ScheduleStore } from "../storage/schedules/types.ts";
import DataLoader from "dataloader";
import type { BaseMessage } from "@langchain/core/messages";
import type { CheckpointRecord, CheckpointWriteRecord, ConversationRecord, InterruptRecord, RunRecord, Usage } from "../domain/records.ts";
import { DEFAULT_AGENT } from "../agent/definitions.ts";
import { ValidationError, isUuid } from "../domain/errors.ts";
import { attributeFailures, correlate, runAt } from "../correlation/index.ts";
import type { RunStore } from "../storage/run-store/types.ts";
import type { ConversationList, ListFilter } from "../storage/conversation-list/types.ts";
import { canSee, isAdmin, type Principal } from "../domain/principal.ts";
import type { CheckpointContentRecord, CheckpointReads, ThreadCheckpoints } from "../storage/checkpoint-reads/types.ts";
import type { PageQuery } from "../storage/page.ts";
import type { ToolCallRecord, ToolJournal } from "../storage/tool-journal/types.ts";
import type { RunEventStore, StoredMessageNode, StoredRunEvent } from "../storage/run-events/types.ts";
import type { RunEvent } from "../domain/events.ts";
import type { CheckpointState, ThreadState } from "../agent/runtime.ts";
import { toApiMessage } from "./messages.ts";

/**
 * LangGraph's state reader (AgentRuntime): what needs the saver's deserialized
 * state, read with the graph of the conversation's agent (its nodes decide `next`).
 */
export interface ThreadStateReader {
  /** The thread's latest state. */
  readThread(conversationId: string, agent: string): Promise<ThreadState>;
  /** The states of the thread's checkpoints, oldest first; with a range, only those from `from` to `to` (at most `count` of them, when given). */
  readHistory(conversationId: string, agent: string, range?: { from: string; to: string; count?: number }): Promise<CheckpointState[]>;
  readCheckpoint(conversationId: string, agent: string, checkpointId: string): Promise<CheckpointState | null>;
}

export interface ReadSources {
  runs: RunStore;
  conversationList: ConversationList;
  checkpointReads: CheckpointReads;
  toolJournal: ToolJournal;
  runEvents: RunEventStore;
  states: ThreadStateReader;
  /** The webhook outbox; without it runs show no deliveries. */
  webhooks?: WebhookStore;
  /** Schedules, for the one that started a run; without them no run shows one. */
  schedules?: Pick<ScheduleStore, "schedulesOfRuns">;
}

/**
 * Up to this many checkpoints of one thread asked for in one round are read one
 * by one; more, and the span of history that holds them is read in one pass.
 * Each checkpoint holds the thread's whole message list, so deserializing is
 * what costs: only the span asked for is deserialized.
 */
export const SINGLE_READS_PER_THREAD = 4;

export const CHECKPOINT_PAGE_MAX = 100;
export const CHECKPOINT_PAGE_DEFAULT = 20;

export interface FailedTask {
  taskId: string;
  message: string;
  /** The checkpoint the task ran from (its __error__ write is recorded against it). */
  checkpoint: CheckpointRecord;
}

/** One conversation's runs and checkpoints with the correlation drawn. */
export interface ThreadView {
  checkpoints: CheckpointRecord[];
  /** In start order. */
  runs: RunRecord[];
  checkpointById: Map<string, CheckpointRecord>;
  runOfCheckpoint: Map<string, RunRecord | null>;
  checkpointsOfRun: Map<string, CheckpointRecord[]>;
  failedTasksOfRun: Map<string, FailedTask[]>;
}

export interface CheckpointPageArgs {
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
}

export interface CheckpointPage {
  nodes: CheckpointRecord[];
  hasPreviousPage: boolean;
  hasNextPage: boolean;
}

export function buildThreadView(thread: ThreadCheckpoints, runs: RunRecord[]): ThreadView {
  const { checkpoints, errorWrites } = thread;
  const checkpointIds = checkpoints.map((c) => c.id);
  const checkpointById = new Map(checkpoints.map((c) => [c.id, c]));
  const runOfCheckpoint = new Map<string, RunRecord | null>();
  const checkpointsOfRun = new Map<string, CheckpointRecord[]>(runs.map((r) => [r.id, []]));
  correlate(runs, checkpointIds).forEach((run, i) => {
    const checkpoint = checkpoints[i]!;
    runOfCheckpoint.set(checkpoint.id, run);
    if (run) checkpointsOfRun.get(run.id)!.push(checkpoint);
  });
  const failedTasksOfRun = new Map<string, FailedTask[]>(runs.map((r) => [r.id, []]));
  const errors = errorWrites.map((w) => ({ checkpointId: w.checkpointId, taskId: w.taskId, message: errorMessage(w.value) }));
  attributeFailures(runs, checkpointIds, errors).forEach((run, i) => {
    const error = errors[i]!;
    if (run) failedTasksOfRun.get(run.id)!.push({ taskId: error.taskId, message: error.message, checkpoint: checkpointById.get(error.checkpointId)! });
  });
  return { checkpoints, runs, checkpointById, runOfCheckpoint, checkpointsOfRun, failedTasksOfRun };
}

/** The text of an __error__ write: LangGraph stores {message, name}. */
function errorMessage(value: unknown): string {
  const message = (value as { message?: unknown } | null)?.message;
  if (typeof message === "string") return message;
  return value === null || value === undefined ? "unknown error" : JSON.stringify(value);
}

/** Validates Relay arguments of a checkpoint page and turns them into a read window; bad input is a ValidationError. */
export function pageWindow(args: CheckpointPageArgs): { after: string | null; before: string | null; size: number; fromEnd: boolean } {
  const { first, last } = args;
  const after = args.after ?? null;
  const before = args.before ?? null;
  if (first != null && first < 0) throw new ValidationError("first must not be negative", "first");
  if (last != null && last < 0) throw new ValidationError("last must not be negative", "last");
  if (first != null && last != null) throw new ValidationError("pass first or last, not both", "last");
  if (after !== null && !isUuid(after)) throw new ValidationError("after must be a checkpoint cursor (a checkpoint id)", "after");
  if (before !== null && !isUuid(before)) throw new ValidationError("before must be a checkpoint cursor (a checkpoint id)", "before");
  const size = Math.min(first ?? last ?? CHECKPOINT_PAGE_DEFAULT, CHECKPOINT_PAGE_MAX);
  return { after: after?.toLowerCase() ?? null, before: before?.toLowerCase() ?? null, size, fromEnd: last != null };
}

const byKey = <K, V>(keys: readonly K[], found: Map<K, V>, missing: V): V[] => keys.map((k) => (found.has(k) ? found.get(k)! : missing));
const checkpointKey = (c: { threadId: string; checkpointId: string }) => `${c.threadId} ${c.checkpointId}`;
function splitKey(key: string): { threadId: string; checkpointId: string } {
  const [threadId, checkpointId] = key.split(" ") as [string, string];
  return { threadId, checkpointId };
}

export class ReadScope {
  readonly #sources: ReadSources;
  readonly #conversations: DataLoader<string, ConversationRecord | null>;
  readonly #runs: DataLoader<string, RunRecord | null>;
  readonly #activeRuns: DataLoader<string, RunRecord | null>;
  readonly #latestRuns: DataLoader<string, RunRecord | null>;
  readonly #runCounts: DataLoader<string, number>;
  readonly #queuePositions: DataLoader<string, number | null>;
  readonly #usage: DataLoader<string, Usage>;
  readonly #interrupts: DataLoader<string, InterruptRecord[]>;
  readonly #toolCalls: DataLoader<string, ToolCallRecord[]>;
  readonly #webhookDeliveries: DataLoader<string, WebhookDeliveryRecord[]>;
  readonly #schedulesOfRuns: DataLoader<string, ScheduleRecord | null>;
  readonly #storedEvents: DataLoader<string, StoredRunEvent[]>;
  readonly #runPages = new Map<string, DataLoader<string, RunRecord[]>>();
  readonly #threadStates: DataLoader<string, ThreadState>;
  readonly #threads: DataLoader<string, ThreadView>;
  readonly #checkpoints: DataLoader<string, CheckpointRecord | null>;
  readonly #checkpointPages = new Map<string, DataLoader<string, CheckpointRecord[]>>();
  readonly #runCheckpoints: DataLoader<RunRecord, CheckpointRecord[], string>;
  readonly #writes: DataLoader<string, CheckpointWriteRecord[]>;
  readonly #contents: DataLoader<string, CheckpointContentRecord | null>;
  readonly #states: DataLoader<string, CheckpointState | null>;
  /** Checkpoints whose run is known from that run's own window. */
  readonly #runOfCheckpoint = new Map<string, RunRecord>();

  readonly principal: Principal;

  constructor(sources: ReadSources, principal: Principal) {
    this.#sources = sources;
    this.principal = principal;
    const { runs, checkpointReads } = sources;
    this.#conversations = new DataLoader(async (ids) => byKey(ids, await runs.conversations(ids), null).map((c) => (c && canSee(principal, c) ? c : null)));
    // A run, and a checkpoint below, of a conversation this principal may not see, is missing.
    this.#runs = new DataLoader(async (ids) => this.#visible(byKey(ids, await runs.runs(ids), null), (run) => run.conversationId));
    this.#activeRuns = new DataLoader(async (ids) => byKey(ids, await runs.activeRuns(ids), null));
    this.#latestRuns = new DataLoader(async (ids) => byKey(ids, await runs.latestRuns(ids), null));
    this.#queuePositions = new DataLoader(async (ids) => byKey(ids, await runs.queuePositions(ids), null));
    this.#runCounts = new DataLoader(async (ids) => byKey(ids, await runs.runCounts(ids), 0));
    this.#usage = new DataLoader(async (ids) => byKey(ids, await runs.usageOf(ids), { inputTokens: 0, outputTokens: 0, modelCalls: 0, modelDurationMs: 0 }));
    this.#interrupts = new DataLoader(async (ids) => byKey(ids, await runs.interruptsOf(ids), []));
    this.#toolCalls = new DataLoader(async (ids) => byKey(ids, await sources.toolJournal.byRuns(ids), []));
    this.#schedulesOfRuns = new DataLoader(async (ids) => byKey(ids, (await sources.schedules?.schedulesOfRuns(ids)) ?? new Map(), null));
    this.#webhookDeliveries = new DataLoader(async (ids) => byKey(ids, (await sources.webhooks?.deliveriesOf(ids)) ?? new Map(), []));
    this.#storedEvents = new DataLoader(async (ids) => byKey(ids, await sources.runEvents.byRuns(ids), []));
    this.#threadStates = new DataLoader(async (ids) => Promise.all(ids.map(async (id) => sources.states.readThread(id, await this.#agentOf(id)))));
    this.#threads = new DataLoader(async (ids) => {
      // Checkpoints first, then runs: see the top of this file.
      const threads = await checkpointReads.threads(ids);
      const runsOf = await runs.runsOf(ids);
      return ids.map((id) => buildThreadView(threads.get(id) ?? { checkpoints: [], errorWrites: [] }, runsOf.get(id) ?? []));
    });
    this.#checkpoints = new DataLoader(async (ids) => {
      const found = new Map((await checkpointReads.checkpointsByIds(ids)).map((c) => [c.id, c]));
      return this.#visible(byKey(ids, found, null), (checkpoint) => checkpoint.threadId);
    });
    this.#runCheckpoints = new DataLoader(
      async (runsAsked) => {
        const found = await checkpointReads.checkpointsInWindows(
          runsAsked.map((run) => ({ key: run.id, threadId: run.conversationId, startMark: run.startMark, endMark: run.endMark })),
        );
        return runsAsked.map((run) => found.get(run.id) ?? []);
      },
      { cacheKeyFn: (run) => run.id },
    );
    this.#writes = new DataLoader(async (keys) => {
      const found = new Map<string, CheckpointWriteRecord[]>(keys.map((k) => [k, []]));
      for (const write of await checkpointReads.writes(keys.map(splitKey))) found.get(checkpointKey(write))?.push(write);
      return byKey(keys, found, []);
    });
    this.#contents = new DataLoader(async (keys) => {
      const found = new Map((await checkpointReads.contents(keys.map(splitKey))).map((c) => [checkpointKey(c), c]));
      return byKey(keys, found, null);
    });
    this.#states = new DataLoader(async (keys) => this.#readStates(keys));
  }

  /** Keeps the records whose conversation this principal may see; the others become null. */
  async #visible<T>(records: (T | null)[], conversationOf: (record: T) => string): Promise<(T | null)[]> {
    const conversations = await this.#conversations.loadMany(records.flatMap((r) => (r ? [conversationOf(r)] : [])));
    const visible = new Set(conversations.flatMap((c) => (c && !(c instanceof Error) ? [c.id] : [])));
    return records.map((r) => (r && visible.has(conversationOf(r)) ? r : null));
  }

  // Conversations and runs.

  conversation(id: string): Promise<ConversationRecord | null> {
    return this.#conversations.load(id);
  }

  run(id: string): Promise<RunRecord | null> {
    return this.#runs.load(id);
  }

  activeRun(conversationId: string): Promise<RunRecord | null> {
    return this.#activeRuns.load(conversationId);
  }

  /** A queued run's place in its endpoint's queue (the run itself was read through this scope); null once it is not queued. */
  queuePosition(runId: string): Promise<number | null> {
    return this.#queuePositions.load(runId);
  }

  latestRun(conversationId: string): Promise<RunRecord | null> {
    return this.#latestRuns.load(conversationId);
  }

  runCount(conversationId: string): Promise<number> {
    return this.#runCounts.load(conversationId);
  }

  /** One page of the conversation's runs; conversations asked for the same page in one round share a statement. */
  runPage(conversationId: string, page: PageQuery): Promise<RunRecord[]> {
    const signature = JSON.stringify([page.cursor ?? null, page.skip, page.take]);
    let loader = this.#runPages.get(signature);
    if (!loader) {
      loader = new DataLoader(async (ids) => byKey(ids, await this.#sources.runs.runPages(ids, page), []));
      this.#runPages.set(signature, loader);
    }
    return loader.load(conversationId);
  }

  /**
   * A page of the conversations this principal may see: a user's own; an
   * admin's, everyone's or one owner's (`owner`). A user's `owner` must be their own.
   */
  conversationPage(page: PageQuery, owner?: string | null): Promise<ConversationRecord[]> {
    return this.#sources.conversationList.page(page, this.#listFilter(owner));
  }

  conversationCount(owner?: string | null): Promise<number> {
    return this.#sources.conversationList.count(this.#listFilter(owner));
  }

  #listFilter(owner: string | null | undefined): ListFilter {
    if (isAdmin(this.principal)) return owner == null ? {} : { owner };
    return { owner: this.principal.id };
  }

  /** The thread's latest state (messages, next, pending interrupts), read once per execution. */
  threadState(conversationId: string): Promise<ThreadState> {
    return this.#threadStates.load(conversationId);
  }

  /** The sum of the conversation's runs' usage. */
  usage(conversationId: string): Promise<Usage> {
    return this.#usage.load(conversationId);
  }

  /** Every interrupt raised in the conversation, oldest first. */
  interruptsOf(conversationId: string): Promise<InterruptRecord[]> {
    return this.#interrupts.load(conversationId);
  }

  /** The interrupts the run raised. */
  async interruptsOfRun(run: RunRecord): Promise<InterruptRecord[]> {
    return (await this.interruptsOf(run.conversationId)).filter((i) => i.runId === run.id);
  }

  /**
   * The tool calls the run attempted, oldest first. An attempt still marked
   * started whose run has ended was cut off (a crash, a cancel, a shutdown):
   * it is shown in doubt before any resume has looked at it.
   */
  async toolCallsOf(run: RunRecord): Promise<ToolCallRecord[]> {
    if (!(await this.conversation(run.conversationId))) return [];
    const calls = await this.#toolCalls.load(run.id);
    return run.status === "running" ? calls : calls.map((c) => (c.state === "started" ? { ...c, state: "in_doubt" } : c));
  }

  /** The schedule whose firing started the run, when this principal may see it. */
  async scheduleOf(run: RunRecord): Promise<ScheduleRecord | null> {
    const schedule = await this.#schedulesOfRuns.load(run.id);
    return schedule && canSee(this.principal, schedule) ? schedule : null;
  }

  /** The webhook deliveries of the run's end or wait, oldest first. */
  async webhookDeliveriesOf(run: RunRecord): Promise<WebhookDeliveryRecord[]> {
    if (!(await this.conversation(run.conversationId))) return [];
    return this.#webhookDeliveries.load(run.id);
  }

  /** The custom events the run published, in seq order, as its event stream carried them. */
  async customEventsOf(run: RunRecord): Promise<Extract<RunEvent, { type: "custom" }>[]> {
    return (await this.#storedEventsOf(run)).flatMap((e) =>
      e.kind === "custom"
        ? [{ type: "custom" as const, name: e.name, data: e.data, seq: e.seq, at: e.at, runId: run.id, conversationId: run.conversationId }]
        : [],
    );
  }

  /** The node each message the run streamed came from, with the seq of its first token, in seq order. */
  async messageNodesOf(run: RunRecord): Promise<StoredMessageNode[]> {
    return (await this.#storedEventsOf(run)).filter((e): e is StoredMessageNode => e.kind === "message");
  }

  /** Only the events of a run whose conversation this principal may see. */
  async #storedEventsOf(run: RunRecord): Promise<StoredRunEvent[]> {
    if (!(await this.conversation(run.conversationId))) return [];
    return this.#storedEvents.load(run.id);
  }

  /**
   * The interrupts the thread waits on now (LangGraph's pending tasks are the
   * truth), each with the record of the run that raised it.
   */
  async pendingInterrupts(conversationId: string): Promise<InterruptRecord[]> {
    const [state, records] = await Promise.all([this.threadState(conversationId), this.interruptsOf(conversationId)]);
    return state.interrupts.flatMap((pending) => {
      const raised = records.filter((r) => r.id === pending.id).at(-1);
      return raised ? [{ ...raised, answeredByRunId: null, answer: null, answeredAt: null }] : [];
    });
  }

  /** The agent of a conversation (the default for one that is gone: its thread is gone too). */
  async #agentOf(conversationId: string): Promise<string> {
    return (await this.conversation(conversationId))?.agent ?? DEFAULT_AGENT;
  }

  // Checkpoints and the correlation.

  /** A conversation's runs and checkpoints, correlated. */
  thread(conversationId: string): Promise<ThreadView> {
    return this.#threads.load(conversationId);
  }

  /** A checkpoint of an existing conversation by its id, or null. */
  checkpoint(id: string): Promise<CheckpointRecord | null> {
    return isUuid(id) ? this.#checkpoints.load(id.toLowerCase()) : Promise.resolve(null);
  }

  async checkpointPage(conversationId: string, args: CheckpointPageArgs): Promise<CheckpointPage> {
    const { after, before, size, fromEnd } = pageWindow(args);
    const signature = JSON.stringify([after, before, size, fromEnd]);
    let loader = this.#checkpointPages.get(signature);
    if (!loader) {
      loader = new DataLoader(async (ids) => byKey(ids, await this.#sources.checkpointReads.pages(ids, { after, before, limit: size + 1, fromEnd }), []));
      this.#checkpointPages.set(signature, loader);
    }
    const rows = await loader.load(conversationId);
    const more = rows.length > size;
    if (fromEnd) {
      return { nodes: more ? rows.slice(rows.length - size) : rows, hasPreviousPage: more, hasNextPage: before !== null };
    }
    return { nodes: more ? rows.slice(0, size) : rows, hasPreviousPage: after !== null, hasNextPage: more };
  }

  async parent(checkpoint: CheckpointRecord): Promise<CheckpointRecord | null> {
    if (checkpoint.parentId === null) return null;
    const view = await this.thread(checkpoint.threadId);
    return view.checkpointById.get(checkpoint.parentId) ?? (await this.checkpoint(checkpoint.parentId));
  }

  /** The run whose window holds the checkpoint, or null. */
  async runOf(checkpoint: CheckpointRecord): Promise<RunRecord | null> {
    const windowed = this.#runOfCheckpoint.get(checkpoint.id);
    if (windowed) return windowed;
    const view = await this.thread(checkpoint.threadId);
    const known = view.runOfCheckpoint.get(checkpoint.id);
    // A checkpoint newer than this execution's snapshot is placed against the same runs.
    return known !== undefined ? known : runAt(view.runs, checkpoint.id);
  }

  /** The checkpoints inside the run's own window: read by window, so a page of runs never reads the rest of a long thread. */
  async checkpointsOf(run: RunRecord): Promise<CheckpointRecord[]> {
    const checkpoints = await this.#runCheckpoints.load(run);
    // Windows never overlap: the run that holds a checkpoint is known without the thread.
    for (const checkpoint of checkpoints) this.#runOfCheckpoint.set(checkpoint.id, run);
    return checkpoints;
  }

  async failedTasksOf(run: RunRecord): Promise<FailedTask[]> {
    return (await this.thread(run.conversationId)).failedTasksOfRun.get(run.id) ?? [];
  }

  writes(checkpoint: CheckpointRecord): Promise<CheckpointWriteRecord[]> {
    return this.#writes.load(checkpointKey({ threadId: checkpoint.threadId, checkpointId: checkpoint.id }));
  }

  /** The checkpoint's message count and last message, read from its stored state. */
  contents(checkpoint: CheckpointRecord): Promise<CheckpointContentRecord | null> {
    return this.#contents.load(checkpointKey({ threadId: checkpoint.threadId, checkpointId: checkpoint.id }));
  }

  /** LangGraph's state at the checkpoint (next, messages, pending tasks). */
  state(checkpoint: CheckpointRecord): Promise<CheckpointState | null> {
    return this.#states.load(checkpointKey({ threadId: checkpoint.threadId, checkpointId: checkpoint.id }));
  }

  /**
   * LangGraph's states at consecutive checkpoints of one thread (a page of an
   * export), read for those alone and cached nowhere: an export walks a long
   * thread a page at a time, and this execution's caches would keep every page.
   */
  async statesOfPage(conversationId: string, page: readonly CheckpointRecord[]): Promise<(CheckpointState | null)[]> {
    if (page.length === 0 || !(await this.conversation(conversationId))) return page.map(() => null);
    const range = { from: page[0]!.id, to: page.at(-1)!.id, count: page.length };
    const found = new Map((await this.#sources.states.readHistory(conversationId, await this.#agentOf(conversationId), range)).map((s) => [s.checkpointId, s]));
    return page.map((c) => found.get(c.id) ?? null);
  }

  /** The message counts and last messages of checkpoints of one thread, cached nowhere (see statesOfPage). */
  async contentsOfPage(conversationId: string, page: readonly CheckpointRecord[]): Promise<(CheckpointContentRecord | null)[]> {
    if (page.length === 0 || !(await this.conversation(conversationId))) return page.map(() => null);
    const found = new Map(
      (await this.#sources.checkpointReads.contents(page.map((c) => ({ threadId: conversationId, checkpointId: c.id })))).map((c) => [c.checkpointId, c]),
    );
    return page.map((c) => found.get(c.id) ?? null);
  }

  /**
   * The messages that first appear in the run's checkpoints, in thread order:
   * those in the state at its last checkpoint that the state it started from
   * (the parent of its first checkpoint) did not hold. An edit's are also those
   * it changed (a message replaced under its own id).
   */
  async messagesOf(run: RunRecord): Promise<BaseMessage[]> {
    const own = (await this.thread(run.conversationId)).checkpointsOfRun.get(run.id) ?? [];
    const first = own[0];
    const last = own.at(-1);
    if (!first || !last) return [];
    const [before, after] = await Promise.all([
      first.parentId === null ? null : this.#states.load(checkpointKey({ threadId: run.conversationId, checkpointId: first.parentId })),
      this.state(last),
    ]);
    const held = new Map((before?.messages ?? []).map((m) => [m.id, m] as const));
    const changed = (m: BaseMessage) => run.kind === "edit" && JSON.stringify(toApiMessage(held.get(m.id)!, 0)) !== JSON.stringify(toApiMessage(m, 0));
    return (after?.messages ?? []).filter((m) => m.id === undefined || !held.has(m.id) || changed(m));
  }

  /** The name of the node a task of this checkpoint runs, from LangGraph's pending tasks. */
  async taskNode(checkpoint: CheckpointRecord, taskId: string): Promise<string | null> {
    return (await this.state(checkpoint))?.tasks.find((t) => t.id === taskId)?.name ?? null;
  }

  async #readStates(keys: readonly string[]): Promise<(CheckpointState | null)[]> {
    const byThread = new Map<string, string[]>();
    for (const { threadId, checkpointId } of keys.map(splitKey)) byThread.set(threadId, [...(byThread.get(threadId) ?? []), checkpointId]);
    const result = new Map<string, CheckpointState | null>();
    await Promise.all(
      [...byThread].map(async ([threadId, checkpointIds]) => {
        let states: (CheckpointState | null)[];
        const agent = await this.#agentOf(threadId);
        if (checkpointIds.length <= SINGLE_READS_PER_THREAD) {
          states = await Promise.all(checkpointIds.map((id) => this.#sources.states.readCheckpoint(threadId, agent, id)));
        } else {
          const sorted = [...checkpointIds].sort();
          const span = await this.#sources.states.readHistory(threadId, agent, { from: sorted[0]!, to: sorted.at(-1)! });
          const found = new Map(span.map((s) => [s.checkpointId, s]));
          states = checkpointIds.map((id) => found.get(id) ?? null);
        }
        checkpointIds.forEach((id, i) => result.set(checkpointKey({ threadId, checkpointId: id }), states[i] ?? null));
      }),
    );
    return keys.map((k) => result.get(k) ?? null);
  }
}

/**
 * The scope of each execution: resolvers pass `info.rootValue`, which graphql-js
 * sets to the event for each event of a subscription. A context runs one
 * execution at a time (a query, or its subscription's events in turn), so only
 * the current scope is kept: an event's caches go with it.
 */
export function readScopes(sources: ReadSources, principal: Principal): (execution: unknown) => ReadScope {
  let current: { execution: unknown; scope: ReadScope } | undefined;
  return (execution) => {
    if (!current || current.execution !== execution) current = { execution, scope: new ReadScope(sources, principal) };
    return current.scope;
  };
}
