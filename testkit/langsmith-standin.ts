// A stand-in for LangSmith's ingest API, for the specs: it answers /info and
// records the runs LangSmith's client sends, in either of its ways (multipart
// POST /runs/multipart, or JSON POST /runs/batch), merged by run id.
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface TracedRun {
  id: string;
  trace_id?: string;
  parent_run_id?: string;
  name?: string;
  run_type?: string;
  extra?: { metadata?: Record<string, unknown> };
  inputs?: unknown;
  outputs?: unknown;
  error?: string;
  end_time?: unknown;
  [key: string]: unknown;
}

export interface LangSmithStandIn {
  /** LANGSMITH_ENDPOINT. */
  url: string;
  /** Every request received, as "METHOD path". */
  requests: string[];
  runs: Map<string, TracedRun>;
  close(): Promise<void>;
}

export async function startLangSmithStandIn(): Promise<LangSmithStandIn> {
  const runs = new Map<string, TracedRun>();
  const requests: string[] = [];
  const merge = (id: string, fields: Record<string, unknown>) => runs.set(id, { ...runs.get(id), ...fields, id } as TracedRun);

  const server = http.createServer(async (req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    requests.push(`${req.method} ${path}`);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    if (req.method === "GET" && path === "/info") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ version: "stand-in" }));
      return;
    }
    if (req.method === "POST" && path === "/runs/multipart") {
      // Parts are named "<post|patch>.<run id>" (the run) or "<post|patch>.<run id>.<field>" (inputs, outputs, ...).
      const form = await new Request("http://stand-in/", { method: "POST", headers: { "content-type": String(req.headers["content-type"]) }, body }).formData();
      for (const [name, value] of form.entries()) {
        const [, id, field] = name.split(".");
        const text = typeof value === "string" ? value : await value.text();
        const parsed = JSON.parse(text) as Record<string, unknown>;
        merge(id!, field ? { [field]: parsed } : parsed);
      }
      res.writeHead(202, { "content-type": "application/json" }).end("{}");
      return;
    }
    if (req.method === "POST" && path === "/runs/batch") {
      const { post = [], patch = [] } = JSON.parse(body.toString("utf8")) as { post?: TracedRun[]; patch?: TracedRun[] };
      for (const run of [...post, ...patch]) merge(run.id, run);
      res.writeHead(202, { "content-type": "application/json" }).end("{}");
      return;
    }
    res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ detail: "not found" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    runs,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
