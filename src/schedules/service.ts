// Schedules as the API sees them: create, pause, resume, delete, list and
// look up, each scoped to the caller as conversations are (a user: their own;
// an admin: every one; another user's is a NotFoundError, as a missing one).
// Refusals are thrown before anything is written.
import { randomUUID } from "node:crypto";
import { isUuid, NotFoundError, requireUuid, ValidationError } from "../domain/errors.ts";
import { canSee, isAdmin, type Principal } from "../domain/principal.ts";
import type { PageQuery } from "../storage/page.ts";
import type { RunStore } from "../storage/run-store/types.ts";
import type { MissedPolicy, ScheduleRecord, ScheduleStore } from "../storage/schedules/types.ts";
import { requireWebhook, type WebhookInput, type WebhookPolicy } from "../webhooks/url-guard.ts";
import { nextFiring, validateCron } from "./cron.ts";

export interface CreateScheduleInput {
  agent: string;
  cron: string;
  timezone: string;
  message: string;
  conversationId?: string | null;
  missedPolicy?: MissedPolicy | null;
  /** The webhook each firing's run gets. */
  webhook?: WebhookInput | null;
}

export interface ScheduleServiceOptions {
  store: ScheduleStore;
  /** For the conversation a schedule names. */
  runStore: Pick<RunStore, "getConversation">;
  /** The configured agents. */
  agents: { agent(name: string): unknown };
  /** The run service's check of a message (blank, too long, NUL). */
  validateMessage(message: string): string;
  /** What a schedule's webhook is checked against; none: no webhook is accepted. */
  webhookPolicy?: WebhookPolicy;
  now?: () => Date;
  /** Told when a schedule was created or resumed here (the sweeper, which may sleep until a later firing, looks again). */
  onScheduled?: () => void;
}

export class ScheduleService {
  readonly #options: ScheduleServiceOptions;
  readonly #now: () => Date;

  constructor(options: ScheduleServiceOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => new Date());
  }

  async create(input: CreateScheduleInput, principal: Principal): Promise<ScheduleRecord> {
    const now = this.#now();
    const message = this.#options.validateMessage(input.message);
    const nextRunAt = validateCron(input.cron, input.timezone, now);
    const webhook = input.webhook ? requireWebhook(input.webhook, this.#options.webhookPolicy ?? { allowPrivate: false, canSign: false }) : null;
    let conversationId: string | null = null;
    if (input.conversationId != null) {
      requireUuid(input.conversationId, "conversationId");
      const conversation = await this.#options.runStore.getConversation(input.conversationId);
      if (!conversation || !canSee(principal, conversation)) throw new NotFoundError("Conversation", input.conversationId);
      if (conversation.owner !== principal.id) {
        throw new ValidationError("a schedule's conversation must be its creator's own: each firing runs as the schedule's owner", "conversationId");
      }
      if (conversation.agent !== input.agent) {
        throw new ValidationError(`conversation ${conversation.id} runs agent ${JSON.stringify(conversation.agent)}; a conversation keeps its agent`, "agent");
      }
      conversationId = conversation.id;
    }
    if (!this.#options.agents.agent(input.agent)) throw new ValidationError(`agent ${JSON.stringify(input.agent)} is not configured`, "agent");
    const created = await this.#options.store.create({
      id: randomUUID(),
      agent: input.agent,
      cron: input.cron.trim(),
      timezone: input.timezone.trim(),
      message,
      conversationId,
      owner: principal.id,
      ownerRole: principal.role,
      missedPolicy: input.missedPolicy ?? "SKIP",
      nextRunAt,
      createdAt: now,
      webhook,
    });
    this.#options.onScheduled?.();
    return created;
  }

  /** The schedule when the principal may see it; null otherwise, exactly as for one that does not exist. */
  async get(id: string, principal: Principal): Promise<ScheduleRecord | null> {
    if (!isUuid(id)) return null;
    const schedule = await this.#options.store.get(id);
    return schedule && canSee(principal, schedule) ? schedule : null;
  }

  async #visible(id: string, principal: Principal): Promise<ScheduleRecord> {
    requireUuid(id, "scheduleId");
    const schedule = await this.get(id, principal);
    if (!schedule) throw new NotFoundError("Schedule", id);
    return schedule;
  }

  /** Stops its firings; its next time stays as it was until it is resumed. */
  async pause(id: string, principal: Principal): Promise<ScheduleRecord> {
    await this.#visible(id, principal);
    const paused = await this.#options.store.setPaused(id, true, null);
    if (!paused) throw new NotFoundError("Schedule", id);
    return paused;
  }

  /** Fires again from the first time after now: what it would have fired while paused is not made up. */
  async resume(id: string, principal: Principal): Promise<ScheduleRecord> {
    const schedule = await this.#visible(id, principal);
    const resumed = await this.#options.store.setPaused(id, false, nextFiring(schedule.cron, schedule.timezone, this.#now()));
    if (!resumed) throw new NotFoundError("Schedule", id);
    this.#options.onScheduled?.();
    return resumed;
  }

  /** Deletes it and its firings; the runs it started stay (their Run.schedule becomes null). */
  async delete(id: string, principal: Principal): Promise<string> {
    await this.#visible(id, principal);
    if (!(await this.#options.store.delete(id))) throw new NotFoundError("Schedule", id);
    return id;
  }

  /** The caller's schedules (an admin's: everyone's), oldest first. */
  list(query: PageQuery, principal: Principal): Promise<ScheduleRecord[]> {
    return this.#options.store.list(query, isAdmin(principal) ? null : principal.id);
  }
}
