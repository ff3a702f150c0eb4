// The WEBHOOK_* settings (docs/webhooks.md): nothing is signed, so no webhook
// is accepted, until WEBHOOK_SECRET is set.
import { booleanVar, ConfigError, intVar, type Env } from "./vars.ts";

export interface WebhookConfig {
  /** `WEBHOOK_URL`: every run's end and wait are told here too, besides a run's own webhook. */
  url: string | undefined;
  /** `WEBHOOK_SECRET` (`whsec_` and base64 of 24 to 64 bytes): signs every delivery (Standard Webhooks). Unset: no webhook is accepted. */
  secret: string | undefined;
  /** `WEBHOOK_ALLOW_PRIVATE` (true/false, default false): allows private, loopback and link-local targets. */
  allowPrivate: boolean;
  /** `WEBHOOK_POLL_MS`, default 5000: how often an instance looks for deliveries due besides when a run ends (retries, and what a stopped instance left). */
  pollMs: number;
  /** `WEBHOOK_RETRY_MS`, default 5000: the wait after a first failed attempt; it doubles each time, to at most an hour. */
  retryMs: number;
  /** `WEBHOOK_RETRY_WINDOW_MS`, default 86400000 (24 h): no attempt starts later than this after the run ended; then the delivery is failed. */
  retryWindowMs: number;
  /** `WEBHOOK_TIMEOUT_MS`, default 10000: one attempt, connect to answer. */
  timeoutMs: number;
}

export function webhookConfig(env: Env): WebhookConfig {
  const url = (env.WEBHOOK_URL ?? "").trim() || undefined;
  const secret = (env.WEBHOOK_SECRET ?? "").trim() || undefined;
  if (secret !== undefined) {
    const key = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret)?.[1];
    const bytes = key ? Buffer.from(key, "base64").length : 0;
    if (bytes < 24 || bytes > 64)
      throw new ConfigError("WEBHOOK_SECRET must be whsec_ followed by the base64 of 24 to 64 random bytes : whsec_$(openssl rand -base64 32) makes one");
  }
  if (url !== undefined) {
    if (secret === undefined) throw new ConfigError("WEBHOOK_URL is set but WEBHOOK_SECRET is not: every delivery is signed with it");
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      // refused below
    }
    if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:"))
      throw new ConfigError(`WEBHOOK_URL must be an http or https URL, not ${JSON.stringify(url)}`);
  }
  return {
    url,
    secret,
    allowPrivate: booleanVar(env, "WEBHOOK_ALLOW_PRIVATE"),
    pollMs: intVar(env, "WEBHOOK_POLL_MS", 5_000, 10, 3_600_000),
    retryMs: intVar(env, "WEBHOOK_RETRY_MS", 5_000, 10, 3_600_000),
    retryWindowMs: intVar(env, "WEBHOOK_RETRY_WINDOW_MS", 86_400_000, 0, 7 * 86_400_000),
    timeoutMs: intVar(env, "WEBHOOK_TIMEOUT_MS", 10_000, 100, 600_000),
  };
}
