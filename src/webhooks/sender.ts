// One attempt to deliver one webhook: a POST of the stored payload, signed by
// the Standard Webhooks scheme (the `standardwebhooks` library) with the
// delivery's id and this attempt's time. Redirects are not followed (a 3xx is
// a failed attempt); the answer's body is read and dropped.
import http from "node:http";
import https from "node:https";
import { Webhook } from "standardwebhooks";
import type { WebhookDeliveryRecord } from "../domain/webhooks.ts";
import { publicLookup, refusalOf, WebhookRefusedError } from "./url-guard.ts";

export interface SendOptions {
  /** WEBHOOK_SECRET (whsec_…). */
  signer: Webhook;
  allowPrivate: boolean;
  /** The whole attempt, connect to last byte. */
  timeoutMs: number;
  userAgent: string;
  signal?: AbortSignal;
  now?: () => Date;
}

/** What an attempt came to: delivered on a 2xx; `refused` when the guard stopped it (not worth retrying). */
export interface SendResult {
  ok: boolean;
  httpStatus: number | null;
  error: string | null;
  refused: boolean;
}

export function webhookSigner(secret: string): Webhook {
  return new Webhook(secret);
}

export function sendWebhook(delivery: Pick<WebhookDeliveryRecord, "id" | "url" | "payload">, options: SendOptions): Promise<SendResult> {
  const url = new URL(delivery.url);
  const refusal = refusalOf(url, options.allowPrivate);
  if (refusal) return Promise.resolve({ ok: false, httpStatus: null, error: refusal, refused: true });
  const at = options.now?.() ?? new Date();
  const body = Buffer.from(delivery.payload);
  const headers = {
    "content-type": "application/json",
    "content-length": String(body.length),
    "user-agent": options.userAgent,
    "webhook-id": delivery.id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": options.signer.sign(delivery.id, at, delivery.payload),
  };
  return new Promise((resolve) => {
    let settled = false;
    const done = (result: SendResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const request = (url.protocol === "https:" ? https : http).request(
      url,
      { method: "POST", headers, lookup: publicLookup(options.allowPrivate), signal: options.signal },
      (response) => {
        const status = response.statusCode ?? 0;
        response.resume();
        response.on("end", () =>
          done(
            status >= 200 && status < 300
              ? { ok: true, httpStatus: status, error: null, refused: false }
              : { ok: false, httpStatus: status, error: `HTTP ${status}`, refused: false },
          ),
        );
        response.on("error", (error) => done({ ok: false, httpStatus: status, error: error.message, refused: false }));
      },
    );
    const timer = setTimeout(() => request.destroy(new Error(`no answer within ${options.timeoutMs} ms`)), options.timeoutMs);
    request.on("error", (error) => done({ ok: false, httpStatus: null, error: error.message || String(error), refused: error instanceof WebhookRefusedError }));
    request.end(body);
  });
}
