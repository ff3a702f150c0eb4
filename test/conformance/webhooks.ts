// The webhook outbox's conformance suite: every backend must pass it. A run's
// targets are recorded with it; its end (finishRun, or a recovery that marks it
// interrupted) writes one pending delivery per target that asked for the event,
// in the same transaction, with the payload receivers get; deliveries outlive
// their run; a claim leases each due delivery to one caller at a time, and an
// attempt is recorded only by the lease's holder; a schedule's firing is linked
// to the run the run's insert writes.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NewRun, RunOutcome, WebhookTarget } from "../../src/domain/records.ts";
import type { RunStore } from "../../src/storage/run-store/types.ts";
import type { WebhookStore } from "../../src/storage/webhooks/types.ts";
import type { StorageBackend, TestStorage } from "./backends.ts";
import { SERVICES_TIMEOUT_MS } from "../../testkit/services.ts";

export function describeWebhookStoreConformance(backend: StorageBackend) {
  describe(`WebhookStore conformance: ${backend.name}`, () => {
    let opened: TestStorage;
    let store: WebhookStore;
    let runs: RunStore;
    beforeAll(async () => {
      opened = await backend.open();
      store = opened.storage.webhooks;
      runs = opened.storage.runs;
    }, SERVICES_TIMEOUT_MS);
    afterAll(() => opened?.close());

    /** Each test works in its own year, later than the one before, and leaves nothing pending. */
    const at = (year: number, second = 0) => new Date(Date.UTC(year, 0, 1, 0, 0, second));
    const BOTH: WebhookTarget["events"] = ["RUN_ENDED", "RUN_WAITING"];

    async function startRun(year: number, webhooks: WebhookTarget[], extra: Partial<NewRun> = {}) {
      const run: NewRun = {
        id: randomUUID(),
        conversationId: randomUUID(),
        kind: "start",
        input: "hi",
        startedAt: at(year),
        startMark: "0001",
        ownerId: "webhooks-owner",
        startCheckpointId: null,
        webhooks,
        ...extra,
      };
      await runs.startRun(run, { title: "hi", agent: "default", owner: "alice" });
      return run;
    }
    const outcome = (year: number, overrides: Partial<RunOutcome> = {}): RunOutcome => ({
      status: "completed",
      errorCode: null,
      errorMessage: null,
      partialOutput: null,
      finishedAt: at(year, 10),
      endMark: "0002",
      lastEventSeq: 3,
      messageCount: 2,
      usage: { inputTokens: 7, outputTokens: 11, modelCalls: 1, timeToFirstTokenMs: 5, modelDurationMs: 40 },
      interrupts: [],
      ...overrides,
    });
    const deliveries = async (runId: string) => (await store.deliveriesOf([runId])).get(runId)!;
    /** Marks every delivery due at `now` delivered, so the next test starts clean. */
    async function deliverAll(now: Date) {
      for (const d of await store.claimDue("cleaner", now, 1000, 60_000))
        await store.recordAttempt(d.id, "cleaner", { at: now, status: "delivered", httpStatus: 200, error: null, nextAttemptAt: null });
    }

    it("writes one pending delivery per target that asked for the event, in the run's end, with the receivers' payload", async () => {
      const run = await startRun(2030, [
        { url: "https://a.example/hook", events: BOTH },
        { url: "https://b.example/hook", events: ["RUN_WAITING"] },
        { url: "https://c.example/hook", events: ["RUN_ENDED"] },
      ]);
      expect(await deliveries(run.id)).toEqual([]);
      await runs.finishRun(run.id, outcome(2030));
      const written = await deliveries(run.id);
      expect(written.map((d) => d.url).sort()).toEqual(["https://a.example/hook", "https://c.example/hook"]);
      for (const d of written) {
        expect(d).toMatchObject({ runId: run.id, event: "RUN_ENDED", status: "pending", attempt: 0, httpStatus: null, error: null, deliveredAt: null });
        expect(d.id).toMatch(/^msg_[0-9a-f]{32}$/);
        expect(d.nextAttemptAt).toEqual(at(2030, 10));
        expect(JSON.parse(d.payload)).toEqual({
          type: "run.ended",
          timestamp: at(2030, 10).toISOString(),
          data: {
            runId: run.id,
            conversationId: run.conversationId,
            kind: "START",
            status: "COMPLETED",
            errorCode: null,
            errorMessage: null,
            startedAt: at(2030).toISOString(),
            finishedAt: at(2030, 10).toISOString(),
            usage: { inputTokens: 7, outputTokens: 11, modelCalls: 1 },
            interrupts: [],
          },
        });
      }
      expect(new Set(written.map((d) => d.id)).size).toBe(2);
      // Ending again changes nothing: a terminal run is not ended twice, nor told twice.
      expect(await runs.finishRun(run.id, outcome(2030, { status: "failed" }))).toBeNull();
      expect(await deliveries(run.id)).toHaveLength(2);
      // A run without targets writes none.
      const quiet = await startRun(2030, []);
      await runs.finishRun(quiet.id, outcome(2030));
      expect(await deliveries(quiet.id)).toEqual([]);
      await deliverAll(at(2030, 30));
    });

    it("tells a waiting run's interrupts as RUN_WAITING, and a run recovered from a gone owner as ended INTERRUPTED", async () => {
      const waiting = await startRun(2031, [{ url: "https://w.example/", events: BOTH }]);
      await runs.finishRun(waiting.id, outcome(2031, { status: "waiting", interrupts: [{ id: "i-1", node: "ask", value: { question: "who?" } }] }));
      const [told] = await deliveries(waiting.id);
      expect(told!.event).toBe("RUN_WAITING");
      expect(JSON.parse(told!.payload)).toMatchObject({
        type: "run.waiting",
        data: { status: "WAITING", interrupts: [{ id: "i-1", node: "ask", value: { question: "who?" } }] },
      });

      const cut = await startRun(2031, [{ url: "https://w.example/", events: ["RUN_ENDED"] }], { ownerId: "gone-webhooks-owner" });
      const recovered = await runs.interruptRunsOfGoneOwners(["gone-webhooks-owner"], at(2031, 20), "0009", "the process stopped", new Map());
      expect(recovered.map((r) => r.id)).toContain(cut.id);
      const [ended] = await deliveries(cut.id);
      expect(ended).toMatchObject({ event: "RUN_ENDED", status: "pending", nextAttemptAt: at(2031, 20) });
      expect(JSON.parse(ended!.payload).data).toMatchObject({
        runId: cut.id,
        status: "INTERRUPTED",
        errorCode: "INTERRUPTED",
        errorMessage: "the process stopped",
      });
      await deliverAll(at(2031, 30));
    });

    it("leases each due delivery to one caller at a time; only the holder records an attempt; a lease that ran out is taken again", async () => {
      const run = await startRun(2032, [{ url: "https://l.example/", events: BOTH }]);
      await runs.finishRun(run.id, outcome(2032));
      expect(await store.claimDue("a", at(2032, 9), 10, 5_000)).toEqual([]); // not due yet
      expect(await store.pendingCount()).toBe(1);
      const claims = await Promise.all(["a", "b", "c"].map((owner) => store.claimDue(owner, at(2032, 10), 10, 5_000)));
      expect(claims.flat()).toHaveLength(1);
      const holder = ["a", "b", "c"][claims.findIndex((c) => c.length === 1)]!;
      const [d] = claims.flat();
      expect(await store.claimDue("z", at(2032, 14), 10, 5_000)).toEqual([]); // leased until 15
      // Lease ran out: another takes it, and the first holder's late record is refused.
      const [again] = await store.claimDue("z", at(2032, 15), 10, 5_000);
      expect(again!.id).toBe(d!.id);
      expect(await store.recordAttempt(d!.id, holder, { at: at(2032, 16), status: "delivered", httpStatus: 200, error: null, nextAttemptAt: null })).toBe(
        false,
      );
      // A failed attempt: pending again, not due before its next time.
      expect(
        await store.recordAttempt(d!.id, "z", { at: at(2032, 16), status: "pending", httpStatus: 503, error: "HTTP 503", nextAttemptAt: at(2032, 40) }),
      ).toBe(true);
      expect(await deliveries(run.id)).toMatchObject([
        { status: "pending", attempt: 1, httpStatus: 503, error: "HTTP 503", nextAttemptAt: at(2032, 40), deliveredAt: null },
      ]);
      expect(await store.claimDue("z", at(2032, 39), 10, 5_000)).toEqual([]);
      const [third] = await store.claimDue("y", at(2032, 40), 10, 5_000);
      expect(await store.recordAttempt(third!.id, "y", { at: at(2032, 41), status: "delivered", httpStatus: 204, error: null, nextAttemptAt: null })).toBe(
        true,
      );
      expect(await deliveries(run.id)).toMatchObject([
        { status: "delivered", attempt: 2, httpStatus: 204, error: null, nextAttemptAt: null, deliveredAt: at(2032, 41) },
      ]);
      expect(await store.claimDue("y", at(2032, 59), 10, 5_000)).toEqual([]);
      expect(await store.pendingCount()).toBe(0);
    });

    it("keeps a failed delivery failed, and a delivery after its run's conversation is deleted", async () => {
      const run = await startRun(2033, [{ url: "https://f.example/", events: BOTH }]);
      await runs.finishRun(run.id, outcome(2033));
      await runs.deleteConversation(run.conversationId);
      expect(await runs.getRun(run.id)).toBeNull();
      const [d] = await store.claimDue("a", at(2033, 10), 10, 5_000);
      expect(d!.runId).toBe(run.id);
      expect(await store.recordAttempt(d!.id, "a", { at: at(2033, 11), status: "failed", httpStatus: null, error: "refused", nextAttemptAt: null })).toBe(true);
      expect(await deliveries(run.id)).toMatchObject([{ status: "failed", attempt: 1, error: "refused", nextAttemptAt: null }]);
      expect(await store.claimDue("a", at(2099), 10, 5_000)).toEqual([]);
    });

    it("lets retention prune deliveries delivered or given up before a date, never a pending one", async () => {
      const pending = await startRun(2036, [{ url: "https://p.example/", events: BOTH }]);
      await runs.finishRun(pending.id, outcome(2036));
      const settled = await opened.storage.retention.countAged("webhook_deliveries", at(2099));
      // Every delivery of the tests above was delivered or failed, each recorded before 2034.
      expect(settled).toBe(await opened.storage.retention.countAged("webhook_deliveries", at(2034)));
      expect(settled).toBeGreaterThanOrEqual(5);
      expect(await opened.storage.retention.countAged("webhook_deliveries", at(2031))).toBe(2);
      expect(await opened.storage.retention.pruneAged("webhook_deliveries", at(2099), 3)).toBe(3);
      while ((await opened.storage.retention.pruneAged("webhook_deliveries", at(2099), 3)) > 0);
      expect(await opened.storage.retention.countAged("webhook_deliveries", at(2099))).toBe(0);
      expect(await deliveries(pending.id)).toMatchObject([{ status: "pending" }]);
      await deliverAll(at(2036, 30));
    });

    it("links a schedule's firing to its run in the run's own insert", async () => {
      const scheduleId = randomUUID();
      await opened.storage.schedules.create({
        id: scheduleId,
        agent: "default",
        cron: "* * * * * *",
        timezone: "UTC",
        message: "tick",
        conversationId: null,
        owner: "alice",
        ownerRole: "user",
        missedPolicy: "SKIP",
        nextRunAt: at(2034),
        createdAt: at(2034),
      });
      const [firing] = await opened.storage.schedules.claimDue(at(2034), 10, "owner-a", () => ({ fireAt: at(2034), next: null }));
      expect(firing!.fireAt).toEqual(at(2034));
      const run = await startRun(2034, [], { firing: { scheduleId, fireAt: at(2034) } });
      expect((await opened.storage.schedules.firings(scheduleId)).map((f) => f.runId)).toEqual([run.id]);
      expect((await opened.storage.schedules.scheduleOfRun(run.id))?.id).toBe(scheduleId);
    });
  });
}
