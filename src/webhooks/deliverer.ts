// The deliverer: on every instance, leases the due deliveries from the outbox
// (each to one instance at a time), sends each once and records what came of
// it. It looks when nudged (a run ended or began waiting, on any instance:
// src/app.ts nudges on conversation changes) and every WEBHOOK_POLL_MS besides,
// for retries that came due and deliveries a stopped instance left. A failed attempt is tried again after an
// exponential backoff (WEBHOOK_RETRY_MS, doubling, at most an hour apart, with
// jitter) until WEBHOOK_RETRY_WINDOW_MS after the run's end; then it is failed.
// Delivery is at least once: an instance that dies mid-send leaves its lease to
// run out, and another sends it again with the same webhook-id.
import type { WebhookDeliveryRecord } from "../domain/webhooks.ts";
import type { Logger } from "../logger.ts";
import type { WebhookAttempt, WebhookStore } from "../storage/webhooks/types.ts";
import { sendWebhook, webhookSigner, type SendResult } from "./sender.ts";

/** At most this long between two attempts. */
const MAX_BACKOFF_MS = 60 * 60 * 1000;
/** Deliveries one look leases, at most; they are sent together. */
const BATCH = 20;
/** A nudge looks this much later, so a burst of run ends makes one look. */
const NUDGE_DELAY_MS = 20;

export interface WebhookDelivererOptions {
  store: WebhookStore;
  /** This instance's run owner id: the lease holder. */
  ownerId: string;
  /** WEBHOOK_SECRET. */
  secret: string;
  allowPrivate: boolean;
  pollMs: number;
  /** WEBHOOK_RETRY_MS: the wait after the first failed attempt. */
  retryMs: number;
  /** WEBHOOK_RETRY_WINDOW_MS: no attempt starts later than this after the delivery was recorded. */
  retryWindowMs: number;
  /** One attempt, at most. */
  timeoutMs: number;
  userAgent: string;
  logger: Logger;
  /** Told of each attempt (metrics). */
  onAttempt?: (delivery: WebhookDeliveryRecord, attempt: WebhookAttempt) => void;
  now?: () => Date;
  /** 0..1, for the jitter; Math.random by default. */
  random?: () => number;
}

/** The wait before attempt `attempts + 1`, after `attempts` failed: retryMs · 2^(attempts-1), capped, ±20 %. */
export function backoffMs(attempts: number, retryMs: number, random: () => number = Math.random): number {
  const base = Math.min(MAX_BACKOFF_MS, retryMs * 2 ** Math.max(0, attempts - 1));
  return Math.round(base * (0.8 + 0.4 * random()));
}

export class WebhookDeliverer {
  readonly #options: WebhookDelivererOptions;
  readonly #now: () => Date;
  readonly #signer;
  readonly #abort = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | null = null;
  #stopped = true;
  /** A look is due at NUDGE_DELAY_MS, or right after the one under way. */
  #nudged = false;

  constructor(options: WebhookDelivererOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => new Date());
    this.#signer = webhookSigner(options.secret);
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#schedule(0);
  }

  /**
   * Stops polling; attempts under way are cut off and not recorded, so their
   * leases run out and another instance (or this one, restarted) sends them again.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#abort.abort();
    await this.#running;
  }

  /** Looks soon: something may have come due (a run ended somewhere). Nudges in a burst make one look. */
  nudge(): void {
    if (this.#stopped || this.#nudged) return;
    this.#nudged = true;
    if (this.#running) return; // the look under way is followed by another at once
    clearTimeout(this.#timer);
    this.#schedule(NUDGE_DELAY_MS);
  }

  #schedule(delay: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#nudged = false;
      this.#running = this.deliverDue()
        .then(() => undefined)
        .catch((error: unknown) => this.#options.logger.warn("webhook delivery look failed", { error }))
        .finally(() => {
          this.#running = null;
          this.#schedule(this.#nudged ? 0 : this.#options.pollMs);
        });
    }, delay);
    this.#timer.unref?.();
  }

  /** One look: leases what is due and attempts each. Answers how many it attempted. */
  async deliverDue(): Promise<number> {
    const { store, ownerId, timeoutMs } = this.#options;
    // The lease outlasts an attempt (and its recording), so no other instance sends it meanwhile.
    const due = await store.claimDue(ownerId, this.#now(), BATCH, timeoutMs * 2 + 1_000);
    await Promise.all(due.map((d) => this.#attempt(d)));
    return due.length;
  }

  async #attempt(delivery: WebhookDeliveryRecord): Promise<void> {
    const o = this.#options;
    const result = await sendWebhook(delivery, {
      signer: this.#signer,
      allowPrivate: o.allowPrivate,
      timeoutMs: o.timeoutMs,
      userAgent: o.userAgent,
      signal: this.#abort.signal,
      now: this.#now,
    });
    if (this.#abort.signal.aborted) return;
    const attempt = this.#outcome(delivery, result);
    const recorded = await o.store.recordAttempt(delivery.id, o.ownerId, attempt).catch((error: unknown) => {
      o.logger.warn("webhook attempt not recorded", { deliveryId: delivery.id, error });
      return false;
    });
    if (!recorded) return;
    o.onAttempt?.(delivery, attempt);
    if (attempt.status === "failed")
      o.logger.warn("webhook delivery given up", {
        deliveryId: delivery.id,
        runId: delivery.runId,
        url: delivery.url,
        attempts: delivery.attempt + 1,
        error: attempt.error,
      });
  }

  #outcome(delivery: WebhookDeliveryRecord, result: SendResult): WebhookAttempt {
    const at = this.#now();
    if (result.ok) return { at, status: "delivered", httpStatus: result.httpStatus, error: null, nextAttemptAt: null };
    const next = new Date(at.getTime() + backoffMs(delivery.attempt + 1, this.#options.retryMs, this.#options.random));
    const giveUp = result.refused || next.getTime() > delivery.createdAt.getTime() + this.#options.retryWindowMs;
    return { at, status: giveUp ? "failed" : "pending", httpStatus: result.httpStatus, error: result.error, nextAttemptAt: giveUp ? null : next };
  }
}
