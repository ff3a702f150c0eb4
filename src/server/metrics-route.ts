// GET /metrics, the Prometheus text exposition. Beside the API it is
// authenticated as every API path is (http.ts) and served to admins only: the
// counts describe every user's runs. With METRICS_PORT it is served instead on
// a port of its own, without authentication, for a scraper on a private network.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { ConfigError } from "../config.ts";
import type { Metrics } from "../telemetry/metrics.ts";
import { principalOf } from "./auth.ts";
import { sendJson } from "./send.ts";

async function sendMetrics(metrics: Metrics, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.setHeader("allow", "GET, HEAD");
    return sendJson(res, 405, { errors: [{ message: "GET /metrics" }] });
  }
  const body = await metrics.text();
  res.writeHead(200, { "content-type": metrics.contentType, "content-length": Buffer.byteLength(body) });
  res.end(req.method === "HEAD" ? undefined : body);
}

/** /metrics beside the API: the caller was authenticated by http.ts; only an admin gets the counts. */
export function metricsRoute(metrics: Metrics): (req: http.IncomingMessage, res: http.ServerResponse) => Promise<boolean> {
  return async (req, res) => {
    if ((req.url ?? "").split("?")[0] !== "/metrics") return false;
    if (principalOf(req).role !== "admin") {
      sendJson(res, 403, { errors: [{ message: "/metrics is for admins", extensions: { code: "FORBIDDEN" } }] });
      return true;
    }
    await sendMetrics(metrics, req, res);
    return true;
  };
}

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

/** METRICS_PORT's server: /metrics and nothing else. */
export async function startMetricsServer(metrics: Metrics, port: number, host: string): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    if ((req.url ?? "").split("?")[0] !== "/metrics") return sendJson(res, 404, { errors: [{ message: "only /metrics is served on METRICS_PORT" }] });
    sendMetrics(metrics, req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "EADDRINUSE") reject(new ConfigError(`METRICS_PORT: ${host}:${port} is already in use; choose another METRICS_PORT`));
      else if (error.code === "EACCES") reject(new ConfigError(`METRICS_PORT: not allowed to listen on ${host}:${port}; choose a METRICS_PORT above 1023`));
      else reject(error);
    });
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
