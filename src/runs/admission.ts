// Admission: which capacity a run needs before it executes. A model server
// serves a few chats at once and queues the rest without sending a byte, so a
// run that started anyway would count that wait as model silence and fail as
// MODEL_TIMEOUT. Each run therefore needs a slot of its model endpoint (an
// Ollama host and model, MODEL_CONCURRENCY runs at once across every instance;
// or an agent's own `concurrency`) and room on the instance that executes it
// (MAX_ACTIVE_RUNS); until it has both it waits QUEUED in the database.
import type { AgentDefinitionBase } from "../agent/definitions.ts";

export interface AdmissionSettings {
  /** `MAX_ACTIVE_RUNS`: runs this instance executes at once, at most. */
  maxActiveRuns: number;
  /** `ADMISSION_LOOP_DELAY_MS`: fewer runs at once while the event loop runs later than this (adaptive-limit.ts); 0 or absent: always MAX_ACTIVE_RUNS. */
  loopDelayTargetMs?: number;
  /** `MODEL_CONCURRENCY`: runs executing at once per Ollama host and model, on every instance together. */
  modelConcurrency: number;
  /** `OLLAMA_HOST`: the endpoint's host for agents without their own. */
  ollamaHost: string;
}

/** The endpoint whose slot a run of `agent` needs: the agent's own when it sets `concurrency`, else its Ollama host and model. */
export function endpointOf(agent: Pick<AgentDefinitionBase, "name" | "model" | "concurrency">, ollamaHost: string): string {
  return agent.concurrency !== undefined ? `agent:${agent.name}` : `${ollamaHost.replace(/\/+$/, "")}#${agent.model}`;
}

/** Every endpoint this instance can run, with its concurrency. */
export function endpointLimits(
  agents: readonly Pick<AgentDefinitionBase, "name" | "model" | "concurrency">[],
  settings: AdmissionSettings,
): Map<string, number> {
  const limits = new Map<string, number>();
  for (const agent of agents) limits.set(endpointOf(agent, settings.ollamaHost), agent.concurrency ?? settings.modelConcurrency);
  return limits;
}
