// A webhook receiver for tests: a real HTTP server that checks every request's
// Standard Webhooks signature with the `standardwebhooks` library (as a
// receiving app would), keeps what it got, and answers as told: 200 by default,
// or a status for the next N requests to a path.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

export interface ReceivedWebhook {
  path: string;
  /** The webhook-id header. */
  id: string;
  /** The signature checked out with the secret (and the timestamp is recent). */
  verified: boolean;
  verifyError: string | null;
  /** The parsed body. */
  body: { type: string; timestamp: string; data: Record<string, any> };
  /** What this request was answered. */
  answered: number;
  at: number;
}

export interface WebhookReceiver {
  url: string;
  /** Every request so far, in arrival order. */
  received: ReceivedWebhook[];
  /** The next `times` requests to `path` are answered `status` (and then 200 again). */
  failNext(path: string, times: number, status?: number): void;
  /** Requests to `path` hang without an answer until the receiver closes. */
  hang(path: string): void;
  /** Requests to `path`, one per webhook-id (a receiver de-duplicates by it); the last one of each id. */
  unique(path: string): Map<string, ReceivedWebhook>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(secret: string): Promise<WebhookReceiver> {
  const verifier = new Webhook(secret);
  const received: ReceivedWebhook[] = [];
  const failures = new Map<string, { times: number; status: number }>();
  const hanging = new Set<string>();
  const held = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      const path = (req.url ?? "/").split("?")[0]!;
      const headers = {
        "webhook-id": String(req.headers["webhook-id"] ?? ""),
        "webhook-timestamp": String(req.headers["webhook-timestamp"] ?? ""),
        "webhook-signature": String(req.headers["webhook-signature"] ?? ""),
      };
      let verified = false;
      let verifyError: string | null = null;
      try {
        verifier.verify(raw, headers);
        verified = true;
      } catch (error) {
        verifyError = (error as Error).message;
      }
      const failure = failures.get(path);
      const answered = failure && failure.times > 0 ? failure.status : 200;
      if (failure && failure.times > 0) failure.times -= 1;
      let body: ReceivedWebhook["body"];
      try {
        body = JSON.parse(raw);
      } catch {
        body = { type: "unparseable", timestamp: "", data: { raw } };
      }
      received.push({ path, id: headers["webhook-id"], verified, verifyError, body, answered, at: Date.now() });
      if (hanging.has(path)) {
        held.add(res);
        return;
      }
      res.writeHead(answered, { "content-type": "text/plain" }).end(answered === 200 ? "ok" : "not now");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    failNext(path, times, status = 500) {
      failures.set(path, { times, status });
    },
    hang(path) {
      hanging.add(path);
    },
    unique(path) {
      const byId = new Map<string, ReceivedWebhook>();
      for (const r of received) if (r.path === path) byId.set(r.id, r);
      return byId;
    },
    async close() {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A Standard Webhooks secret: whsec_ and the base64 of 32 random bytes. */
export function webhookSecret(): string {
  return `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64")}`;
}
