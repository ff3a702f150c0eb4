// A conversation's summed usage as both run stores' usageOf statement returns it.
import type { Usage } from "../../domain/records.ts";

/** Sums of input_tokens, output_tokens, model_calls and model_duration_ms, per conversation. */
export interface UsageRow {
  conversation_id: string;
  i: number;
  o: number;
  c: number;
  d: number;
}

export const toUsage = (r: UsageRow): Usage => ({ inputTokens: r.i, outputTokens: r.o, modelCalls: r.c, modelDurationMs: r.d });

/** What a conversation without runs has used. */
export const noUsage = (): Usage => ({ inputTokens: 0, outputTokens: 0, modelCalls: 0, modelDurationMs: 0 });
