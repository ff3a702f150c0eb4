// Tells when a graph run has really finished. When a run's AbortSignal fires, the
// stream LangGraph returns rejects at once, while the graph's loop keeps going in
// the background until its last checkpoint and task-error writes are stored. The
// graph's own root callback (end or error) comes only after that, so a caller
// that waits for it reads the thread as the run left it, not a moment before.
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";

export class GraphSettled extends BaseCallbackHandler {
  name = "graph-settled";
  #rootRunId: string | undefined;
  #settle!: () => void;
  readonly #settled = new Promise<void>((resolve) => {
    this.#settle = resolve;
  });

  constructor() {
    // Called inline, not queued: the signal matters only if it is on time.
    super({ _awaitHandler: true });
  }

  // LangChain calls this with the parent run's id fourth, where its declared types put the run type
  // (CallbackManager.handleChainStart passes runId, parentRunId, tags, metadata, runType, runName).
  override handleChainStart(_chain: unknown, _inputs: unknown, runId: string, parentRunId?: string): void {
    if (parentRunId === undefined && this.#rootRunId === undefined) this.#rootRunId = runId;
  }

  override handleChainEnd(_outputs: unknown, runId: string): void {
    if (runId === this.#rootRunId) this.#settle();
  }

  override handleChainError(_error: unknown, runId: string): void {
    if (runId === this.#rootRunId) this.#settle();
  }

  /** Resolves once the graph has finished, or after `timeoutMs` (a graph that never started never reports). */
  async wait(timeoutMs: number): Promise<void> {
    if (this.#rootRunId === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.#settled, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
  }
}
