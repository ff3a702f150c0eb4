// Per-execution loaders over the checkpoint read model: one GraphQL operation,
// or one event of a subscription, gets one scope. Within it each conversation's
// runs, checkpoints and failed tasks are read once (batched with every other
// conversation asked for in the same round) and correlated once. Deserialized
// states (next, messages) are read only when a field needs them: a few
// checkpoints one by one, more through one read of the thread's history.
import type { BaseMessage } from "@langchain/core/messages";
import type { CheckpointState } from "../agent/runtime.ts";
import type { RunRecord } from "../runs/store.ts";
import { ValidationError } from "../runs/errors.ts";
import { BatchLoader } from "./batch-loader.ts";
import type { CheckpointContentRecord, CheckpointReadModel, CheckpointRecord, CheckpointWriteRecord, ThreadRecords } from "./checkpoints.ts";
import { attributeFailures, correlate, runAt } from "./correlation.ts";

/** Where deserialized states come from (AgentRuntime): LangGraph's state reader. */
export interface ThreadStateReader {
  /** The states of the thread's checkpoints, oldest first; with a range, only those from `from` to `to`. */
  readHistory(conversationId: string, range?: { from: string; to: string }): Promise<CheckpointState[]>;
  readCheckpoint(conversationId: string, checkpointId: string): Promise<CheckpointState | null>;
}

/**
 * Up to this many checkpoints of one thread asked for in one round are read one
 * by one; more, and the span of history that holds them is read in one pass.
 * Each checkpoint holds the thread's whole message list, so deserializing is
 * what costs: only the span asked for is deserialized.
 */
export const SINGLE_READS_PER_THREAD = 4;

export interface FailedTask {
  taskId: string;
  message: string;
  /** The checkpoint the task ran from (its __error__ write is recorded against it). */
  checkpoint: CheckpointRecord;
}

/** One conversation's runs and checkpoints with the correlation drawn. */
export interface ThreadView {
  records: ThreadRecords;
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

export const CHECKPOINT_PAGE_MAX = 100;
export const CHECKPOINT_PAGE_DEFAULT = 20;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function buildThreadView(records: ThreadRecords): ThreadView {
  const { runs, checkpoints, errorWrites } = records;
  const checkpointById = new Map(checkpoints.map((c) => [c.id, c]));
  const runOfCheckpoint = new Map<string, RunRecord | null>();
  const checkpointsOfRun = new Map<string, CheckpointRecord[]>(runs.map((r) => [r.id, []]));
  correlate(
    runs,
    checkpoints.map((c) => c.id),
  ).forEach((run, i) => {
    const checkpoint = checkpoints[i]!;
    runOfCheckpoint.set(checkpoint.id, run);
    if (run) checkpointsOfRun.get(run.id)!.push(checkpoint);
  });
  const failedTasksOfRun = new Map<string, FailedTask[]>(runs.map((r) => [r.id, []]));
  const errors = errorWrites.map((w) => ({ checkpointId: w.checkpointId, taskId: w.taskId, message: errorMessage(w.value) }));
  attributeFailures(
    runs,
    checkpoints.map((c) => c.id),
    errors,
  ).forEach((run, i) => {
    const error = errors[i]!;
    if (run) failedTasksOfRun.get(run.id)!.push({ taskId: error.taskId, message: error.message, checkpoint: checkpointById.get(error.checkpointId)! });
  });
  return { records, checkpointById, runOfCheckpoint, checkpointsOfRun, failedTasksOfRun };
}

/** The text of an __error__ write: LangGraph stores {message, name}. */
function errorMessage(value: unknown): string {
  const message = (value as { message?: unknown } | null)?.message;
  if (typeof message === "string") return message;
  return value === null || value === undefined ? "unknown error" : JSON.stringify(value);
}

/** Validates Relay arguments and turns them into a read window; bad input is a ValidationError. */
export function pageWindow(args: CheckpointPageArgs): { after: string | null; before: string | null; size: number; fromEnd: boolean } {
  const { first, last } = args;
  const after = args.after ?? null;
  const before = args.before ?? null;
  if (first != null && first < 0) throw new ValidationError("first must not be negative", "first");
  if (last != null && last < 0) throw new ValidationError("last must not be negative", "last");
  if (first != null && last != null) throw new ValidationError("pass first or last, not both", "last");
  if (after !== null && !UUID.test(after)) throw new ValidationError("after must be a checkpoint cursor (a checkpoint id)", "after");
  if (before !== null && !UUID.test(before)) throw new ValidationError("before must be a checkpoint cursor (a checkpoint id)", "before");
  // Like the other connections: larger pages are cut to the maximum.
  const size = Math.min(first ?? last ?? CHECKPOINT_PAGE_DEFAULT, CHECKPOINT_PAGE_MAX);
  return { after: after?.toLowerCase() ?? null, before: before?.toLowerCase() ?? null, size, fromEnd: last != null };
}

export class CheckpointReadScope {
  readonly #threads: BatchLoader<ThreadView>;
  readonly #checkpoints: BatchLoader<CheckpointRecord | null>;
  readonly #writes: BatchLoader<CheckpointWriteRecord[]>;
  readonly #states: BatchLoader<CheckpointState | null>;
  readonly #contents: BatchLoader<CheckpointContentRecord | null>;
  readonly #pages = new Map<string, BatchLoader<CheckpointRecord[]>>();
  readonly #runCheckpoints: BatchLoader<CheckpointRecord[]>;
  /** Runs whose windows were asked for, by id (the loader's keys are ids). */
  readonly #windowRuns = new Map<string, RunRecord>();
  readonly #runOfCheckpoint = new Map<string, RunRecord>();

  constructor(
    private readonly model: CheckpointReadModel,
    private readonly stateReader: ThreadStateReader,
  ) {
    this.#states = new BatchLoader((keys) => this.#readStates(keys), () => null);
    this.#runCheckpoints = new BatchLoader(
      (runIds) =>
        model.checkpointsInWindows(
          runIds.map((id) => {
            const run = this.#windowRuns.get(id)!;
            return { key: id, threadId: run.conversationId, from: run.startMark, to: run.endMark };
          }),
        ),
      () => [],
    );
    this.#contents = new BatchLoader(
      async (keys) => new Map((await model.contents(keys.map(splitKey))).map((c) => [`${c.threadId} ${c.checkpointId}`, c])),
      () => null,
    );
    this.#threads = new BatchLoader(
      async (ids) => new Map([...(await model.threads(ids))].map(([id, records]) => [id, buildThreadView(records)])),
      () => buildThreadView({ runs: [], checkpoints: [], errorWrites: [] }),
    );
    this.#checkpoints = new BatchLoader(
      async (ids) => new Map((await model.checkpointsByIds(ids)).map((c) => [c.id, c])),
      () => null,
    );
    this.#writes = new BatchLoader(
      async (keys) => {
        const byKey = new Map<string, CheckpointWriteRecord[]>(keys.map((k) => [k, []]));
        for (const write of await model.writes(keys.map(splitKey))) byKey.get(`${write.threadId} ${write.checkpointId}`)?.push(write);
        return byKey;
      },
      () => [],
    );
  }

  /** A conversation's runs and checkpoints, correlated. */
  thread(conversationId: string): Promise<ThreadView> {
    return this.#threads.load(conversationId);
  }

  /** A checkpoint of an existing conversation by its id, or null. */
  checkpoint(id: string): Promise<CheckpointRecord | null> {
    return UUID.test(id) ? this.#checkpoints.load(id.toLowerCase()) : Promise.resolve(null);
  }

  async page(conversationId: string, args: CheckpointPageArgs): Promise<CheckpointPage> {
    const { after, before, size, fromEnd } = pageWindow(args);
    const signature = JSON.stringify([after, before, size, fromEnd]);
    let loader = this.#pages.get(signature);
    if (!loader) {
      loader = new BatchLoader((ids) => this.model.pages(ids, { after, before, limit: size + 1, fromEnd }), () => []);
      this.#pages.set(signature, loader);
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
    // A checkpoint newer than this scope's snapshot is placed against the same runs.
    return known !== undefined ? known : runAt(view.records.runs, checkpoint.id);
  }

  /** The checkpoints inside the run's own window: read by window, so a page of runs never reads the rest of a long thread. */
  async checkpointsOf(run: RunRecord): Promise<CheckpointRecord[]> {
    this.#windowRuns.set(run.id, run);
    const checkpoints = await this.#runCheckpoints.load(run.id);
    // Windows never overlap: the run that holds a checkpoint is known without the thread.
    for (const checkpoint of checkpoints) this.#runOfCheckpoint.set(checkpoint.id, run);
    return checkpoints;
  }

  async failedTasksOf(run: RunRecord): Promise<FailedTask[]> {
    return (await this.thread(run.conversationId)).failedTasksOfRun.get(run.id) ?? [];
  }

  writes(checkpoint: CheckpointRecord): Promise<CheckpointWriteRecord[]> {
    return this.#writes.load(`${checkpoint.threadId} ${checkpoint.id}`);
  }

  /** The checkpoint's message count and last message, read from its blob. */
  contents(checkpoint: CheckpointRecord): Promise<CheckpointContentRecord | null> {
    return this.#contents.load(`${checkpoint.threadId} ${checkpoint.id}`);
  }

  /** LangGraph's state at the checkpoint (next, messages, pending tasks). */
  state(checkpoint: CheckpointRecord): Promise<CheckpointState | null> {
    return this.#states.load(`${checkpoint.threadId} ${checkpoint.id}`);
  }

  /** The thread's states, oldest first (a whole history: for exports). */
  history(conversationId: string): Promise<CheckpointState[]> {
    return this.stateReader.readHistory(conversationId);
  }

  /**
   * The messages that first appear in the run's checkpoints, in thread order:
   * those in the state at its last checkpoint that the state it started from
   * (the parent of its first checkpoint) did not hold.
   */
  async messagesOf(run: RunRecord): Promise<BaseMessage[]> {
    const own = (await this.thread(run.conversationId)).checkpointsOfRun.get(run.id) ?? [];
    const first = own[0];
    const last = own.at(-1);
    if (!first || !last) return [];
    const [before, after] = await Promise.all([
      first.parentId === null ? null : this.#states.load(`${run.conversationId} ${first.parentId}`),
      this.state(last),
    ]);
    const held = new Set((before?.messages ?? []).map((m) => m.id));
    return (after?.messages ?? []).filter((m) => m.id === undefined || !held.has(m.id));
  }

  /** The name of the node a task of this checkpoint runs, from LangGraph's pending tasks. */
  async taskNode(checkpoint: CheckpointRecord, taskId: string): Promise<string | null> {
    return (await this.state(checkpoint))?.tasks.find((t) => t.id === taskId)?.name ?? null;
  }

  async #readStates(keys: string[]): Promise<Map<string, CheckpointState | null>> {
    const byThread = new Map<string, string[]>();
    for (const { threadId, checkpointId } of keys.map(splitKey)) byThread.set(threadId, [...(byThread.get(threadId) ?? []), checkpointId]);
    const result = new Map<string, CheckpointState | null>();
    await Promise.all(
      [...byThread].map(async ([threadId, checkpointIds]) => {
        let states: (CheckpointState | null)[];
        if (checkpointIds.length <= SINGLE_READS_PER_THREAD) {
          states = await Promise.all(checkpointIds.map((id) => this.stateReader.readCheckpoint(threadId, id)));
        } else {
          const sorted = [...checkpointIds].sort();
          const span = await this.stateReader.readHistory(threadId, { from: sorted[0]!, to: sorted.at(-1)! });
          const byId = new Map(span.map((s) => [s.checkpointId, s]));
          states = checkpointIds.map((id) => byId.get(id) ?? null);
        }
        checkpointIds.forEach((id, i) => result.set(`${threadId} ${id}`, states[i] ?? null));
      }),
    );
    return result;
  }
}

function splitKey(key: string): { threadId: string; checkpointId: string } {
  const [threadId, checkpointId] = key.split(" ") as [string, string];
  return { threadId, checkpointId };
}

/**
 * The scope for one execution: the operation, or one event of a subscription.
 * Resolvers pass `info.rootValue`, which graphql-js sets to the event for each
 * event of a subscription, so a long subscription never reads stale caches. A
 * context runs one execution at a time (a query, or its subscription's events in
 * turn), so only the current scope is kept: an event's caches go with it.
 */
export function checkpointScopes(model: CheckpointReadModel, stateReader: ThreadStateReader): (execution: unknown) => CheckpointReadScope {
  let current: { execution: unknown; scope: CheckpointReadScope } | undefined;
  return (execution) => {
    if (!current || current.execution !== execution) current = { execution, scope: new CheckpointReadScope(model, stateReader) };
    return current.scope;
  };
}
