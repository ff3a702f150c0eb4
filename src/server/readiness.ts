// Readiness (/ready): the database answers, the event bus carries events (Redis,
// when REDIS_URL is set) and Ollama serves the configured model and every
// agent's own; any of these failing takes the instance out of rotation (503).
// An MCP server that is down only degrades it (200, `degraded: true`): its
// agents run without its tools until it is back, as at start-up. Served by
// yoga's readiness plugin; liveness (/health) is yoga's own. The retention
// sweeper is reported (whether this instance holds its lease, its last sweep)
// but never takes the instance out of rotation: retention can wait.
import { useReadinessCheck, type Plugin } from "graphql-yoga";
import type { Logger } from "../logger.ts";

export interface ReadinessProbe {
  /** Throws when the database does not answer. */
  database(): Promise<void>;
  ollamaHost: string;
  ollamaModel: string;
  /** Agents (RUNLEDGER_CONFIG) and the model each runs; those on OLLAMA_MODEL add nothing to check. */
  agentModels?: { agent: string; model: string }[];
  /** Throws when the event bus does not carry events. */
  events?(): Promise<void>;
  /** The agents' MCP servers as they are now. */
  mcpServers?(): { agent: string; server: string; state: string; lastError: string | undefined }[];
  /** The retention sweeper as it is now. */
  retention?(): RetentionStatus;
}

/** What /ready says of the retention sweeper (src/retention/sweeper.ts). */
export interface RetentionStatus {
  /** active: this instance holds the lease and sweeps; standby: another does, or this one has not tried yet. */
  state: "active" | "standby";
  lastSweepAt: string | null;
  lastError: string | null;
}

type ModelProbe = Pick<ReadinessProbe, "ollamaHost" | "ollamaModel" | "agentModels">;

export interface Readiness {
  ready: boolean;
  database: string;
  model: string;
  events: string;
  /** Each MCP server, as "agent/server": "ok", or what is wrong (present when agents have servers). */
  mcpServers?: Record<string, string>;
  /** Present, true, when an MCP server is down: the instance serves, some agents lack tools. */
  degraded?: true;
  /** The retention sweeper on this instance. */
  retention?: RetentionStatus;
}

/** Whether Ollama serves the model: what /ready reports, and what start-up warns about. */
export type ModelCheck =
  | { status: "ok" }
  | { status: "unreachable" | "error"; /** As /ready words it. */ message: string }
  | {
      status: "notPulled";
      message: string;
      /** The models Ollama lacks, OLLAMA_MODEL's first, each with the agents that run it. */ missing: { model: string; agents: string[] }[];
    };

export async function checkModel(probe: ModelProbe): Promise<ModelCheck> {
  try {
    const response = await fetch(`${probe.ollamaHost}/api/tags`, { signal: AbortSignal.timeout(2_000) });
    if (!response.ok) return { status: "error", message: `error: Ollama answered HTTP ${response.status}` };
    const { models = [] } = (await response.json()) as { models?: { name?: string; model?: string }[] };
    const names = new Set(models.flatMap((m) => [m.name, m.model]).filter(Boolean));
    const served = (model: string) => (model.includes(":") ? [model] : [model, `${model}:latest`]).some((w) => names.has(w));
    const wanted = new Map<string, string[]>([[probe.ollamaModel, []]]);
    for (const { agent, model } of probe.agentModels ?? []) wanted.set(model, [...(wanted.get(model) ?? []), agent]);
    const missing = [...wanted].filter(([model]) => !served(model)).map(([model, agents]) => ({ model, agents }));
    if (missing.length === 1) return { status: "notPulled", message: `error: model ${missing[0]!.model} is not pulled`, missing };
    if (missing.length > 1) return { status: "notPulled", message: `error: models ${missing.map((m) => m.model).join(", ")} are not pulled`, missing };
    return { status: "ok" };
  } catch (error) {
    const cause = (error as { cause?: { code?: unknown } }).cause?.code;
    const detail = `${(error as Error).message}${typeof cause === "string" ? `: ${cause}` : ""}`;
    return { status: "unreachable", message: `error: Ollama unreachable (${detail})` };
  }
}

export async function checkReadiness(probe: ReadinessProbe): Promise<Readiness> {
  let database = "ok";
  try {
    await probe.database();
  } catch (error) {
    database = `error: ${(error as Error).message}`;
  }
  let events = "ok";
  try {
    await probe.events?.();
  } catch (error) {
    events = `error: ${(error as Error).message}`;
  }
  const check = await checkModel(probe);
  const model = check.status === "ok" ? "ok" : check.message;
  const result: Readiness = { ready: database === "ok" && model === "ok" && events === "ok", database, model, events };
  const servers = probe.mcpServers?.() ?? [];
  if (servers.length) {
    result.mcpServers = Object.fromEntries(
      servers.map((s) => [`${s.agent}/${s.server}`, s.state === "ready" ? "ok" : `${s.state}${s.lastError ? `: ${s.lastError}` : ""}`]),
    );
    if (servers.some((s) => s.state !== "ready")) result.degraded = true;
  }
  if (probe.retention) result.retention = probe.retention();
  return result;
}

/**
 * Checks once whether Ollama serves the model and says so in the log: a warning
 * naming the problem and the variable to look at, so a server that cannot
 * answer does not look healthy until its first run fails. Never throws.
 */
export async function reportModelAtStartup(probe: ModelProbe, logger: Pick<Logger, "info" | "warn">): Promise<void> {
  const check = await checkModel(probe);
  const fields = { OLLAMA_HOST: probe.ollamaHost, OLLAMA_MODEL: probe.ollamaModel };
  if (check.status === "ok") {
    logger.info((probe.agentModels ?? []).some((a) => a.model !== probe.ollamaModel) ? "Ollama serves every agent's model" : "Ollama serves the model", fields);
  } else if (check.status === "unreachable") {
    logger.warn(
      `Ollama cannot be reached at OLLAMA_HOST (${check.message.replace(/^error: Ollama unreachable \((.*)\)$/, "$1")}); runs will fail with MODEL_UNAVAILABLE until it answers: start Ollama, or set OLLAMA_HOST to where it listens`,
      fields,
    );
  } else if (check.status === "notPulled") {
    for (const { model, agents } of check.missing) {
      if (model === probe.ollamaModel) {
        logger.warn(
          `Ollama at OLLAMA_HOST does not have the model OLLAMA_MODEL=${probe.ollamaModel}; runs will fail with MODEL_NOT_FOUND until it does: \`ollama pull ${probe.ollamaModel}\`, or set OLLAMA_MODEL to a model it has`,
          fields,
        );
      } else {
        const named = agents.map((a) => JSON.stringify(a)).join(", ");
        logger.warn(
          `Ollama at OLLAMA_HOST does not have the model ${model} of agent${agents.length > 1 ? "s" : ""} ${named} (RUNLEDGER_CONFIG); their runs will fail with MODEL_NOT_FOUND until it does: \`ollama pull ${model}\`, or change the agent's model`,
          { ...fields, model, agents },
        );
      }
    }
  } else {
    logger.warn(`Ollama at OLLAMA_HOST did not list its models (${check.message.replace(/^error: /, "")}); runs may fail until it does`, fields);
  }
}

/** GET /ready: 200 or 503 with `{ready, database, model, events, mcpServers?, degraded?, retention?}` saying what is wrong. */
export function useReadiness(probe: ReadinessProbe): Plugin {
  return useReadinessCheck({
    endpoint: "/ready",
    check: async ({ fetchAPI }) => {
      const result = await checkReadiness(probe);
      return new fetchAPI.Response(JSON.stringify(result), {
        status: result.ready ? 200 : 503,
        headers: { "content-type": "application/json; charset=utf-8" },
      });
    },
  });
}
