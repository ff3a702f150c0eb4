// Liveness (/health: the process answers) and readiness (/ready: the database
// answers and Ollama serves the configured model).
import type { ServerResponse } from "node:http";

export interface ReadinessProbe {
  database(): Promise<void>;
  ollamaHost: string;
  ollamaModel: string;
}

export async function checkReadiness(probe: ReadinessProbe): Promise<{ ready: boolean; database: string; model: string }> {
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

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text) });
  res.end(text);
}
