// Webhooks (docs/webhooks.md): the input that asks for one (on startRun,
// resumeRun and createSchedule), and Run.webhookDeliveries, what came of each.
import type { WebhookDeliveryRecord } from "../domain/webhooks.ts";
import { builder } from "./builder.ts";
import { Run } from "./refs.ts";

export const WebhookEvent = builder.enumType("WebhookEvent", {
  values: {
    RUN_ENDED: { description: "The run ended: COMPLETED, FAILED, CANCELLED or INTERRUPTED, with its error code and usage." },
    RUN_WAITING: { description: "The run waits on interrupts (WAITING), which the payload lists." },
  } as const,
});

export const WebhookInput = builder.inputType("WebhookInput", {
  description:
    "Where to POST when the run ends or waits, signed by the Standard Webhooks scheme with WEBHOOK_SECRET. Private, loopback and link-local targets are refused unless WEBHOOK_ALLOW_PRIVATE is set.",
  fields: (t) => ({
    url: t.string({ required: true, description: "An http or https URL, at most 2048 characters." }),
    events: t.field({ type: [WebhookEvent], description: "Default: both." }),
  }),
});

const WebhookDeliveryStatus = builder.enumType("WebhookDeliveryStatus", {
  values: {
    PENDING: { value: "pending", description: "Not sent yet, or to be sent again at nextAttemptAt." },
    DELIVERED: { value: "delivered", description: "A 2xx answered." },
    FAILED: { value: "failed", description: "Given up: refused by the address guard, or no success within WEBHOOK_RETRY_WINDOW_MS." },
  } as const,
});

const WebhookDelivery = builder.objectRef<WebhookDeliveryRecord>("WebhookDelivery").implement({
  description: "One event told to one URL: the same webhook-id on every attempt, so a receiver de-duplicates by it.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "The webhook-id header (msg_…)." }),
    event: t.field({ type: WebhookEvent, resolve: (d) => d.event }),
    url: t.exposeString("url"),
    attempt: t.exposeInt("attempt", { description: "Attempts made so far." }),
    status: t.field({ type: WebhookDeliveryStatus, resolve: (d) => d.status }),
    httpStatus: t.exposeInt("httpStatus", { nullable: true, description: "The latest attempt's HTTP status; null before one answered." }),
    deliveredAt: t.field({ type: "DateTime", nullable: true, resolve: (d) => d.deliveredAt }),
    nextAttemptAt: t.field({ type: "DateTime", nullable: true, resolve: (d) => d.nextAttemptAt }),
    error: t.exposeString("error", { nullable: true, description: "Why the latest attempt failed." }),
  }),
});

builder.objectField(Run, "webhookDeliveries", (t) =>
  t.field({
    type: [WebhookDelivery],
    description: "The calls told of this run's end or wait, oldest first; recorded with the outcome, so none is lost to a crash.",
    resolve: (run, _a, ctx, info) => ctx.reads(info.rootValue).webhookDeliveriesOf(run),
  }),
);
