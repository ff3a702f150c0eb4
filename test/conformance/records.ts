// Records the conformance suites write, with every field a backend must store.
import type { NewConversation, RunOutcome, RunUsage } from "../../src/domain/records.ts";

export const NO_USAGE: RunUsage = { inputTokens: 0, outputTokens: 0, modelCalls: 0, timeToFirstTokenMs: null, modelDurationMs: 0 };

/** A new conversation of the default agent. */
export function conversation(title: string, overrides: Partial<NewConversation> = {}): NewConversation {
  return { title, agent: "default", owner: "alice", ...overrides };
}

/** What a completed run's outcome adds beyond status and marks. */
export const OUTCOME_EXTRAS: Pick<RunOutcome, "usage" | "interrupts"> = { usage: NO_USAGE, interrupts: [] };
