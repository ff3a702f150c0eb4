// One ChatOllama per run. In @langchain/ollama an abort on a client aborts every
// stream on it, so sharing a client would let one cancel stop other runs.
import { ChatOllama } from "@langchain/ollama";
import { createModelFetch, type ModelTransportReport } from "./model-fetch.ts";

export interface ModelSettings {
  baseUrl: string;
  model: string;
  think: boolean | undefined;
  idleTimeoutMs: number;
}

export function createRunModel(
  settings: ModelSettings,
  signal: AbortSignal,
  report: ModelTransportReport,
  whenBusy?: (backoffMs: number) => Promise<void>,
): ChatOllama {
  return new ChatOllama({
    baseUrl: settings.baseUrl,
    model: settings.model,
    ...(settings.think === undefined ? {} : { think: settings.think }),
    fetch: createModelFetch({ signal, idleTimeoutMs: settings.idleTimeoutMs, report, whenBusy }),
  });
}
