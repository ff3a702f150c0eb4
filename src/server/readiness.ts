// Readiness (/ready): the database answers and Ollama serves the configured
// model. Served by yoga's readiness plugin; liveness (/health) is yoga's own.
import { useReadinessCheck, type Plugin } from "graphql-yoga";
import type { Logger } from "../logger.ts";

export interface ReadinessProbe {
  /** Throws when the database does not answer. */
  database(): Promise<void>;
  ollamaHost: string;
  ollamaModel: string;
}

export interface Readiness {
  ready: boolean;
  database: string;
  model: string;
}

/** Whether Ollama serves the model: what /ready reports, and what start-up warns about. */
export type ModelCheck =
  | { status: "ok" }
  | { status: "unreachable" | "notPulled" | "error"; /** As /ready words it. */ message: string };

export async function checkModel(probe: Pick<ReadinessProbe, "ollamaHost" | "ollamaModel">): Promise<ModelCheck> {
  try {
    const response = await fetch(`${probe.ollamaHost}/api/tags`, { signal: AbortSignal.timeout(2_000) });
    if (!response.ok) return { status: "error", message: `error: Ollama answered HTTP ${response.status}` };
    const { models = [] } = (await response.json()) as { models?: { name?: string; model?: string }[] };
    const names = new Set(models.flatMap((m) => [m.name, m.model]).filter(Boolean));
    const wanted = probe.ollamaModel.includes(":") ? [probe.ollamaModel] : [probe.ollamaModel, `${probe.ollamaModel}:latest`];
    if (!wanted.some((w) => names.has(w))) return { status: "notPulled", message: `error: model ${probe.ollamaModel} is not pulled` };
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
  const check = await checkModel(probe);
  const model = check.status === "ok" ? "ok" : check.message;
  return { ready: database === "ok" && model === "ok", database, model };
}

/**
 * Checks once whether Ollama serves the model and says so in the log: a warning
 * naming the problem and the variable to look at, so a server that cannot
 * answer does not look healthy until its first run fails. Never throws.
 */
export async function reportModelAtStartup(probe: Pick<ReadinessProbe, "ollamaHost" | "ollamaModel">, logger: Pick<Logger, "info" | "warn">): Promise<void> {
  const check = await checkModel(probe);
  const fields = { OLLAMA_HOST: probe.ollamaHost, OLLAMA_MODEL: probe.ollamaModel };
  if (check.status === "ok") {
    logger.info("Ollama serves the model", fields);
  } else if (check.status === "unreachable") {
    logger.warn(
      `Ollama cannot be reached at OLLAMA_HOST (${check.message.replace(/^error: Ollama unreachable \((.*)\)$/, "$1")}); runs will fail with MODEL_UNAVAILABLE until it answers: start Ollama, or set OLLAMA_HOST to where it listens`,
      fields,
    );
  } else if (check.status === "notPulled") {
    logger.warn(
      `Ollama at OLLAMA_HOST does not have the model OLLAMA_MODEL=${probe.ollamaModel}; runs will fail with MODEL_NOT_FOUND until it does: \`ollama pull ${probe.ollamaModel}\`, or set OLLAMA_MODEL to a model it has`,
      fields,
    );
  } else {
    logger.warn(`Ollama at OLLAMA_HOST did not list its models (${check.message.replace(/^error: /, "")}); runs may fail until it does`, fields);
  }
}

/** GET /ready: 200 or 503 with `{ready, database, model}` saying what is wrong. */
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
