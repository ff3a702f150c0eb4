// Usage: what model calls cost, as Ollama reported it at the end of each call.
import type { RunUsage as RunUsageShape, Usage as UsageShape } from "../domain/records.ts";
import { builder } from "./builder.ts";

export const Usage = builder.objectRef<UsageShape>("Usage").implement({
  description: "What model calls cost, as Ollama reported at the end of each call.",
  fields: (t) => ({
    inputTokens: t.exposeInt("inputTokens", { description: "Prompt tokens (Ollama's prompt_eval_count)." }),
    outputTokens: t.exposeInt("outputTokens", { description: "Generated tokens (Ollama's eval_count)." }),
    modelCalls: t.exposeInt("modelCalls"),
    modelDurationMs: t.exposeInt("modelDurationMs", { description: "The sum of Ollama's total_duration." }),
  }),
});

export const RunUsage = builder.objectRef<RunUsageShape>("RunUsage").implement({
  description: "A run's usage, stored when it ends.",
  fields: (t) => ({
    inputTokens: t.exposeInt("inputTokens", { description: "Prompt tokens (Ollama's prompt_eval_count)." }),
    outputTokens: t.exposeInt("outputTokens", { description: "Generated tokens (Ollama's eval_count)." }),
    modelCalls: t.exposeInt("modelCalls"),
    modelDurationMs: t.exposeInt("modelDurationMs", { description: "The sum of Ollama's total_duration." }),
    timeToFirstTokenMs: t.exposeInt("timeToFirstTokenMs", {
      nullable: true,
      description: "From the run's start to its first token, measured by runledger; null when it streamed none.",
    }),
  }),
});
