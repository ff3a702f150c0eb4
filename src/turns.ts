// Turns on the event loop. Every request, model chunk and run of an instance
// shares one thread. Left to itself, Node handles every socket that is ready in
// one pass: under a burst, one pass holds a hundred startRun mutations and the
// buffered tokens of every active run, and a GET /health that arrived meanwhile
// waits for all of it (bench/analysis.md, "Turns"). So the heavy work waits for
// a turn instead: each GraphQL request, each line a model streams, each run
// that starts and each write to a SQLite file. Turns are given in the order
// asked, from setImmediate, about TURN_BUDGET_MS of work per pass of the loop;
// between passes the loop reads every socket again, and what needs no turn
// (the health checks) answers then. Work is not dropped or reordered, only cut
// into slices: a busy instance does the same work as before, and stays
// answerable while it does.
//
// Two lanes: a model's lines go first ("stream"), then the rest ("work":
// requests, run starts, writes), each lane in the order asked. A token is
// never late behind another run's GraphQL request; requests wait while lines
// are waiting, which only happens while the process cannot keep up with its
// streams (docs/design.md, "Every core").
import { createHistogram, type RecordableHistogram } from "node:perf_hooks";

/** How long one pass of the loop gives turns before it lets the loop read its sockets again. */
export const TURN_BUDGET_MS = 2;
/** Turns one pass gives at most, however cheap each is. */
export const TURNS_PER_PASS = 64;

export interface TurnsOptions {
  /**
   * Wall-clock time one pass gives turns for; TURN_BUDGET_MS unless set. A
   * process that loses its core mid-pass spends it too, so a count of turns
   * per pass only holds with the budget out of the way (Infinity).
   */
  budgetMs?: number;
}

interface Pass {
  /** When its first callback ran; -1 until then. */
  start: number;
  /** Its callbacks queued with setImmediate and not yet run. */
  callbacks: number;
}

/** Which line a turn waits in: "stream" (a model's lines) is served before "work" (everything else). */
export type Lane = "stream" | "work";

interface Waiter {
  grant: () => void;
  at: number;
}

export class Turns {
  readonly #streams: Waiter[] = [];
  readonly #work: Waiter[] = [];
  /** The pass queued for the loop's next check phase, until its first callback runs. */
  #next: Pass | null = null;
  /** How long each turn waited, in nanoseconds; read (and reset) by the admission limit. */
  readonly waits: RecordableHistogram = createHistogram();
  readonly #budgetMs: number;

  constructor(options: TurnsOptions = {}) {
    this.#budgetMs = options.budgetMs ?? TURN_BUDGET_MS;
  }

  /**
   * Resolves on a later pass of the event loop, once everything that asked
   * before in its lane has had its turn (and, for "work", every line waiting).
   */
  turn(lane: Lane = "work"): Promise<void> {
    return new Promise<void>((grant) => {
      (lane === "stream" ? this.#streams : this.#work).push({ grant, at: performance.now() });
      this.#fill();
    });
  }

  /** Work waiting for its turn now, in both lanes. */
  get waiting(): number {
    return this.#streams.length + this.#work.length;
  }

  // setImmediate callbacks queued before a check phase run in it, each after
  // the microtasks of the one before: a granted turn's work is done when the
  // next callback looks at the clock. Those queued during it run in the next.
  #fill(): void {
    const pass = (this.#next ??= { start: -1, callbacks: 0 });
    while (pass.callbacks < Math.min(this.waiting, TURNS_PER_PASS)) {
      pass.callbacks++;
      setImmediate(() => this.#grantOne(pass));
    }
  }

  #grantOne(pass: Pass): void {
    if (this.#next === pass) this.#next = null; // begun: turns asked from now on go to the next pass
    pass.callbacks--;
    const now = performance.now();
    if (pass.start < 0) pass.start = now;
    if (now - pass.start < this.#budgetMs) {
      const next = this.#streams.shift() ?? this.#work.shift();
      if (next) {
        this.waits.record(Math.max(1, Math.round((now - next.at) * 1e6)));
        next.grant();
      }
    }
    if (pass.callbacks === 0 && this.waiting > 0) this.#fill();
  }
}

/** The process's turns: one event loop, one line. */
export const turns = new Turns();
