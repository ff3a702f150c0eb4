// The schedule store's conformance suite: every ScheduleStore backend must pass
// it. A schedule reads back as stored; lists are scoped by owner and paged
// oldest first; pause and resume; delete (its firings too, and with its
// conversation); the due query; and a claim taken once however many callers
// claim at the same time, each claimed firing recorded once with its run.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunStore } from "../../src/storage/run-store/types.ts";
import type { ClaimedFiring, NewSchedule, ScheduleStore } from "../../src/storage/schedules/types.ts";
import type { StorageBackend, TestStorage } from "./backends.ts";
import { SERVICES_TIMEOUT_MS } from "../../testkit/services.ts";

export function describeScheduleStoreConformance(backend: StorageBackend) {
  describe(`ScheduleStore conformance: ${backend.name}`, () => {
    let opened: TestStorage;
    let store: ScheduleStore;
    let runs: RunStore;
    beforeAll(async () => {
      opened = await backend.open();
      store = opened.storage.schedules;
      runs = opened.storage.runs;
    }, SERVICES_TIMEOUT_MS);
    afterAll(() => opened?.close());

    /** Each test claims in its own year, so what one leaves due is not another's. */
    const at = (year: number, second = 0, ms = 0) => new Date(Date.UTC(year, 0, 1, 0, 0, second, ms));
    const FAR = at(2099);
    const newSchedule = (overrides: Partial<NewSchedule> = {}): NewSchedule => ({
      id: randomUUID(),
      agent: "default",
      cron: "0 9 * * *",
      timezone: "Europe/Berlin",
      message: "Good morning: what is on today?",
      conversationId: null,
      owner: "alice",
      ownerRole: "user",
      missedPolicy: "SKIP",
      nextRunAt: FAR,
      createdAt: at(2026, 1, 123),
      ...overrides,
    });

    async function conversationWithRun(owner = "alice"): Promise<{ conversationId: string; runId: string }> {
      const runId = randomUUID();
      const conversationId = randomUUID();
      await runs.startRun(
        { id: runId, conversationId, kind: "start", input: "hi", startedAt: at(2026), startMark: "0001", ownerId: "owner-a", startCheckpointId: null },
        { title: "hi", agent: "default", owner },
      );
      return { conversationId, runId };
    }

    const finish = (runId: string) =>
      runs.finishRun(runId, {
        status: "completed",
        errorCode: null,
        errorMessage: null,
        partialOutput: null,
        finishedAt: at(2026, 20),
        endMark: "0002",
        lastEventSeq: 4,
        messageCount: 2,
        usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0, timeToFirstTokenMs: null, modelDurationMs: 0 },
        interrupts: [],
      });

    it("stores a schedule and reads it back as stored, unpaused, with no run yet", async () => {
      const { conversationId } = await conversationWithRun();
      const schedule = newSchedule({ conversationId, missedPolicy: "RUN_ONCE", ownerRole: "admin", message: "Ünïcode — 質問?" });
      const created = await store.create(schedule);
      expect(created).toEqual({ ...schedule, paused: false, lastRunId: null, webhook: null });
      expect(await store.get(schedule.id)).toEqual(created);
      expect(await store.get(randomUUID())).toBeNull();
      const hooked = newSchedule({ webhook: { url: "https://hooks.example/s", events: ["RUN_ENDED"] } });
      expect((await store.create(hooked)).webhook).toEqual({ url: "https://hooks.example/s", events: ["RUN_ENDED"] });
      expect((await store.get(hooked.id))!.webhook).toEqual({ url: "https://hooks.example/s", events: ["RUN_ENDED"] });
      await expect(store.create(newSchedule({ id: schedule.id }))).rejects.toThrow();
      await expect(store.create(newSchedule({ missedPolicy: "LATER" as never }))).rejects.toThrow();
      await expect(store.create(newSchedule({ conversationId: randomUUID() }))).rejects.toThrow();
    });

    it("lists oldest first, one owner's or everyone's, in pages by cursor either way", async () => {
      const owner = `list-${randomUUID()}`;
      const made = [];
      for (let i = 0; i < 5; i++) made.push(await store.create(newSchedule({ owner, createdAt: at(2026, 10 + i) })));
      await store.create(newSchedule({ owner: `${owner}-other`, createdAt: at(2026, 12, 500) }));
      const ids = made.map((s) => s.id);
      expect((await store.list({ take: 10, skip: 0 }, owner)).map((s) => s.id)).toEqual(ids);
      expect((await store.list({ take: 2, skip: 0 }, owner)).map((s) => s.id)).toEqual(ids.slice(0, 2));
      expect((await store.list({ cursor: ids[1], take: 2, skip: 1 }, owner)).map((s) => s.id)).toEqual(ids.slice(2, 4));
      expect((await store.list({ cursor: ids[3], take: -2, skip: 1 }, owner)).map((s) => s.id)).toEqual(ids.slice(1, 3));
      expect((await store.list({ take: -2, skip: 0 }, owner)).map((s) => s.id)).toEqual(ids.slice(3));
      expect(await store.list({ cursor: randomUUID(), take: 2, skip: 1 }, owner)).toEqual([]);
      const everyone = (await store.list({ take: 1000, skip: 0 }, null)).map((s) => s.owner);
      expect(everyone).toContain(owner);
      expect(everyone).toContain(`${owner}-other`);
    });

    it("pauses and resumes: a paused schedule is never due, a resumed one is due at its new time", async () => {
      const schedule = await store.create(newSchedule({ nextRunAt: at(2030) }));
      expect((await store.due(at(2030), 100)).map((s) => s.id)).toContain(schedule.id);
      const paused = await store.setPaused(schedule.id, true, null);
      expect(paused).toMatchObject({ paused: true, nextRunAt: at(2030) });
      expect((await store.due(at(2030), 100)).map((s) => s.id)).not.toContain(schedule.id);
      expect(await store.claimDue(at(2030), 100, "owner-a", () => ({ fireAt: at(2030), next: null }))).toEqual([]);
      const resumed = await store.setPaused(schedule.id, false, at(2031));
      expect(resumed).toMatchObject({ paused: false, nextRunAt: at(2031) });
      expect((await store.due(at(2030), 100)).map((s) => s.id)).not.toContain(schedule.id);
      expect((await store.due(at(2031), 100)).map((s) => s.id)).toContain(schedule.id);
      expect(await store.setPaused(randomUUID(), true, null)).toBeNull();
      await store.delete(schedule.id);
    });

    it("answers the due schedules soonest first, up to the limit, never a later one", async () => {
      const later = await store.create(newSchedule({ nextRunAt: at(2032, 30) }));
      const sooner = await store.create(newSchedule({ nextRunAt: at(2032, 10) }));
      const notYet = await store.create(newSchedule({ nextRunAt: at(2032, 50) }));
      expect((await store.due(at(2032, 30), 100)).map((s) => s.id)).toEqual([sooner.id, later.id]);
      expect((await store.due(at(2032, 30), 1)).map((s) => s.id)).toEqual([sooner.id]);
      for (const s of [later, sooner, notYet]) await store.delete(s.id);
    });

    it("claims each due firing once however many claim at the same time, and records its run", async () => {
      const schedules = [];
      for (let i = 0; i < 6; i++) schedules.push(await store.create(newSchedule({ nextRunAt: at(2034, i) })));
      const now = at(2034, 30);
      const claims = await Promise.all(
        Array.from({ length: 5 }, (_, i) => store.claimDue(now, 100, `owner-${i}`, (s) => ({ fireAt: s.nextRunAt, next: at(2035, 0) }))),
      );
      const claimed: ClaimedFiring[] = claims.flat();
      expect(claimed.map((c) => c.schedule.id).sort()).toEqual(schedules.map((s) => s.id).sort());
      for (const c of claimed) {
        expect(c.fireAt).toEqual(schedules.find((s) => s.id === c.schedule.id)!.nextRunAt);
        expect(c.schedule.nextRunAt).toEqual(at(2035, 0));
      }
      // Claimed again at the same time: nothing is due any more.
      expect(await store.claimDue(now, 100, "owner-x", (s) => ({ fireAt: s.nextRunAt, next: null }))).toEqual([]);
      const { runId } = await conversationWithRun();
      const first = schedules[0]!;
      await store.recordFiring(first.id, first.nextRunAt!, { runId });
      await store.recordFiring(schedules[1]!.id, schedules[1]!.nextRunAt!, { error: "QUOTA_EXCEEDED" });
      const firings = await store.firings(first.id);
      expect(firings).toHaveLength(1);
      expect(firings[0]).toMatchObject({ scheduleId: first.id, fireAt: first.nextRunAt, runId, error: null, claimedAt: now });
      expect((await store.firings(schedules[1]!.id))[0]).toMatchObject({ runId: null, error: "QUOTA_EXCEEDED" });
      expect((await store.get(first.id))!.lastRunId).toBe(runId);
      expect((await store.scheduleOfRun(runId))!.id).toBe(first.id);
      expect(await store.scheduleOfRun(randomUUID())).toBeNull();
      const batch = await store.schedulesOfRuns([runId, randomUUID()]);
      expect([...batch.keys()]).toEqual([runId]);
      expect(batch.get(runId)!.id).toBe(first.id);
      expect(await store.schedulesOfRuns([])).toEqual(new Map());
      // The next firing, at its own time, is claimed once more.
      const next = await store.claimDue(at(2035, 0), 100, "owner-y", () => ({ fireAt: at(2035, 0), next: null }));
      expect(next.map((c) => c.schedule.id).sort()).toEqual(schedules.map((s) => s.id).sort());
      expect(await store.firings(first.id)).toHaveLength(2);
    });

    it("skips a firing the caller decides not to run, still advancing the next time", async () => {
      const schedule = await store.create(newSchedule({ nextRunAt: at(2036) }));
      expect(await store.claimDue(at(2036, 5), 100, "owner-a", () => ({ fireAt: null, next: at(2037) }))).toEqual([]);
      expect((await store.get(schedule.id))!.nextRunAt).toEqual(at(2037));
      expect(await store.firings(schedule.id)).toEqual([]);
      await store.delete(schedule.id);
    });

    it("deletes a schedule with its firings; deleting a conversation deletes its schedules; a run gone leaves its firing without a run", async () => {
      const schedule = await store.create(newSchedule({ nextRunAt: at(2038) }));
      await store.claimDue(at(2038), 100, "owner-a", () => ({ fireAt: at(2038), next: null }));
      expect(await store.firings(schedule.id)).toHaveLength(1);
      expect(await store.delete(schedule.id)).toBe(true);
      expect(await store.get(schedule.id)).toBeNull();
      expect(await store.firings(schedule.id)).toEqual([]);
      expect(await store.delete(schedule.id)).toBe(false);

      const { conversationId, runId } = await conversationWithRun();
      const onIt = await store.create(newSchedule({ conversationId }));
      const elsewhere = await store.create(newSchedule({ nextRunAt: at(2039) }));
      await store.claimDue(at(2039), 100, "owner-a", () => ({ fireAt: at(2039), next: null }));
      await store.recordFiring(elsewhere.id, at(2039), { runId });
      await finish(runId);
      await runs.deleteConversation(conversationId);
      expect(await store.get(onIt.id)).toBeNull();
      expect(await store.firings(elsewhere.id)).toMatchObject([{ runId: null }]);
      expect((await store.get(elsewhere.id))!.lastRunId).toBeNull();
    });
  });
}
