// Readiness (/ready): the database answers and Ollama serves the configured
// model. Served by yoga's readiness plugin; liveness (/health) is yoga's own.
import { useReadinessCheck, type Plugin } from "graphql-yoga";

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

export async function checkReadiness(probe: ReadinessProbe): Promise<Readiness> {
  let database = "ok";
  try {
    await probe.database();
  } catch (error) {
    database = `error: ${(error as Error).message}`;
  }
  let model = "ok";
  try {
    const response = await fetch(`${probe.ollamaHost}/api/tags`, { signal: AbortSignal.timeout(2_000) });
    if (!response.ok) model = `error: Ollama answered HTTP ${response.status}`;
    else {
      const { models = [] } = (await response.json()) as { models?: { name?: string; model?: string }[] };
      const names = new Set(models.flatMap((m) => [m.name, m.model]).filter(Boolean));
      const wanted = probe.ollamaModel.includes(":") ? [probe.ollamaModel] : [probe.ollamaModel, `${probe.ollamaModel}:latest`];
      if (!wanted.some((w) => names.has(w))) model = `error: model ${probe.ollamaModel} is not pulled`;
    }
  } catch (error) {
    model = `error: Ollama unreachable (${(error as Error).message})`;
  }
  return { ready: database === "ok" && model === "ok", database, model };
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
