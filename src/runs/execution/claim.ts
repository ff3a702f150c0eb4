// Claiming queued runs (docs/design.md, section 3, step 3): this instance takes
// what it has room for, each run within its endpoint's slots, and executes it.
// The queue itself and the choice are the run store's (claimQueued).
import type { RunInput } from "../../agent/runtime.ts";
import type { RunRecord } from "../../domain/records.ts";
import { queuedRunPrincipal } from "../../domain/principal.ts";
import type { AdaptiveLimit } from "../adaptive-limit.ts";
import { endpointLimits } from "../admission.ts";
import type { ExecutionContext } from "./context.ts";
import { launchRun } from "./launch.ts";

/**
 * How long other instances leave a run to the instance that queued it (which
 * knows its caller fully): long enough that a busy instance's own claim comes
 * first, short beside a queue wait.
 */
const PREFER_OWN_MS = 5_000;

/** How many runs this instance queued one look at the queue checks for claims elsewhere. */
const FORGET_SCAN = 200;

export class QueueClaims {
  #claiming: Promise<void> | null = null;
  #claimAgain = false;
  /** Whether the last look found runs queued (true until the first look). */
  #queueSeen = true;

  constructor(
    private readonly ctx: ExecutionContext,
    /** Runs this instance admits now: MAX_ACTIVE_RUNS, or fewer while its event loop runs late (ADMISSION_LOOP_DELAY_MS). */
    private readonly limit: AdaptiveLimit | undefined,
    private readonly accepting: () => boolean,
    /** Told after each look whether it found runs queued. */
    private readonly onLook: (queued: boolean) => void = () => {},
  ) {}

  /**
   * Whether there may be queued runs for this instance to look after: the last
   * look found some, or this instance queued runs or holds paused ones.
   */
  get busy(): boolean {
    return this.#queueSeen || this.ctx.queuedBy.size > 0 || this.ctx.held.size > 0;
  }

  /** Settles once the claim under way, if any, is over. */
  get idle(): Promise<void> {
    return this.#claiming ?? Promise.resolve();
  }

  /**
   * Claims what queued runs this instance has room for and executes them. Calls
   * while a claim is under way share it, and one more follows it, so a run
   * queued meanwhile is looked at.
   */
  claimQueued(): Promise<void> {
    if (!this.ctx.options.admission || !this.accepting()) return Promise.resolve();
    if (this.#claiming) {
      this.#claimAgain = true;
      return this.#claiming;
    }
    this.#claiming = (async () => {
      try {
        do {
          this.#claimAgain = false;
          await this.#claimOnce();
        } while (this.#claimAgain && this.accepting());
      } catch (error) {
        this.ctx.options.logger.warn("could not claim queued runs", { error });
      } finally {
        this.#claiming = null;
      }
    })();
    return this.#claiming;
  }

  async #claimOnce(): Promise<void> {
    const { ctx } = this;
    const admission = ctx.options.admission!;
    // With no room it still looks: the queued runs' reasons are brought up to date.
    // A paused run holds no room until it is admitted again.
    this.#queueSeen = await ctx.options.store.anyQueued();
    this.onLook(this.#queueSeen);
    if (!this.#queueSeen) return;
    const room = Math.max(0, this.limit!.current() - (ctx.active.size - ctx.held.size));
    const agents = ctx.options.agent.agents().map((a) => a.definition);
    const ready = [...ctx.held].filter(([, held]) => held.ready).map(([id]) => id);
    const claimed = await ctx.options.store.claimQueued({
      ownerId: ctx.options.ownerId,
      room,
      endpoints: endpointLimits(agents, admission),
      at: ctx.now(),
      own: new Set([...ctx.queuedBy.keys(), ...ready]),
      preferOwnMs: PREFER_OWN_MS,
    });
    await Promise.all(
      claimed.map((run) => {
        const held = ctx.held.get(run.id);
        if (held) return held.admit();
        // Executing here already, no longer paused (stopped meanwhile): its execution records the outcome.
        if (ctx.active.has(run.id)) return;
        return launchClaimed(ctx, run);
      }),
    );
  }

  /**
   * Forgets the callers of runs this instance queued that another instance
   * claimed (or that ended). A look reads at most FORGET_SCAN of them, each
   * look the next ones (a run still queued goes to the back), so a long queue
   * never makes one look long.
   */
  async forgetClaimedElsewhere(): Promise<void> {
    const { queuedBy, queuedOrigin } = this.ctx;
    if (queuedBy.size === 0) return;
    const ids: string[] = [];
    for (const id of queuedBy.keys()) {
      ids.push(id);
      if (ids.length === FORGET_SCAN) break;
    }
    const runs = await this.ctx.options.store.runs(ids).catch(() => null);
    if (!runs) return;
    for (const id of ids) {
      const principal = queuedBy.get(id);
      if (principal === undefined) continue; // claimed here meanwhile
      const origin = queuedOrigin.get(id);
      queuedBy.delete(id);
      queuedOrigin.delete(id);
      if (runs.get(id)?.status !== "queued") continue;
      queuedBy.set(id, principal);
      if (origin) queuedOrigin.set(id, origin);
    }
  }
}

/** Executes a run this instance claimed: its agent and input from the database, its caller as this instance knows it. */
async function launchClaimed(ctx: ExecutionContext, run: RunRecord): Promise<void> {
  const principal = ctx.queuedBy.get(run.id) ?? queuedRunPrincipal(run.startedBy ?? "", run.startedByRole ?? "user");
  ctx.queuedBy.delete(run.id);
  // Claimed by another instance than the one that queued it, the run continues the trace its row names.
  const origin = ctx.queuedOrigin.get(run.id) ?? ctx.telemetry.originFrom(run.traceParent);
  ctx.queuedOrigin.delete(run.id);
  const conversation = await ctx.options.store.getConversation(run.conversationId);
  if (!conversation) return; // deleted meanwhile (only possible once it ended)
  let input: RunInput;
  if (run.kind === "start") input = { kind: "message", text: run.input ?? "" };
  else {
    const answered = ((await ctx.options.store.interruptsOf([run.conversationId])).get(run.conversationId) ?? []).filter((i) => i.answeredByRunId === run.id);
    input = answered.length ? { kind: "answers", answers: Object.fromEntries(answered.map((i) => [i.id, i.answer])) } : { kind: "continue" };
  }
  await launchRun(ctx, { run, agent: conversation.agent, input, change: "updated", principal, origin });
}
