// The conversation list's conformance suite: every backend must give the pages
// the reference gives (newest updatedAt first, then id descending), for every
// first/after and last/before shape, with most sort keys tied.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConversationRecord } from "../../src/domain/records.ts";
import type { PageQuery } from "../../src/storage/page.ts";
import type { StorageBackend, TestStorage } from "./backends.ts";
import { referencePage } from "./reference-page.ts";
import { conversation as newConversation, OUTCOME_EXTRAS } from "./records.ts";

export function describeConversationListConformance(backend: StorageBackend) {
  describe(`ConversationList conformance: ${backend.name}`, () => {
    let opened: TestStorage;
    let ordered: ConversationRecord[];
    const base = Date.parse("2026-11-30T14:02:00.000Z");

    beforeAll(async () => {
      opened = await backend.open();
      const { runs } = opened.storage;
      // 60 conversations over 12 distinct updatedAt values, so most sort keys tie and the id decides.
      for (let i = 0; i < 60; i++) {
        const conversationId = randomUUID();
        const { run } = await runs.startRun(
          {
            id: randomUUID(),
            conversationId,
            kind: "start",
            input: `m${i}`,
            startedAt: new Date(base - i * 1000),
            startMark: `s${i}`,
            ownerId: "o",
            startCheckpointId: null,
          },
          newConversation(`conversation ${i}`),
        );
        await runs.finishRun(run.id, {
          status: "completed",
          errorCode: null,
          errorMessage: null,
          partialOutput: null,
          finishedAt: new Date(base + (i % 12) * 250),
          endMark: `e${i}`,
          lastEventSeq: 3,
          messageCount: i,
          ...OUTCOME_EXTRAS,
        });
      }
      const all = [...(await runs.conversations((await opened.storage.conversationList.page({ skip: 0, take: 1000 })).map((c) => c.id))).values()];
      ordered = all.sort((x, y) => y.updatedAt.getTime() - x.updatedAt.getTime() || (x.id < y.id ? 1 : x.id > y.id ? -1 : 0));
    });
    afterAll(async () => {
      await opened?.close();
    });

    it("holds every conversation written, each as the run store reads it", async () => {
      expect(ordered).toHaveLength(60);
      const page = await opened.storage.conversationList.page({ skip: 0, take: 60 });
      expect(page).toEqual(ordered);
      expect(new Set(ordered.map((c) => c.updatedAt.getTime())).size).toBe(12);
    });

    it("gives the reference's rows for every first/after and last/before shape", async () => {
      const queries: PageQuery[] = [];
      for (const take of [1, 2, 5, 21, 61, -1, -2, -5, -21, -61, 0]) {
        for (const skip of [0, 1, 3]) {
          queries.push({ skip, take });
          for (const c of [ordered[0]!, ordered[7]!, ordered[30]!, ordered[59]!]) queries.push({ cursor: c.id, skip, take });
        }
      }
      for (const query of queries) {
        expect(
          (await opened.storage.conversationList.page(query)).map((c) => c.id),
          JSON.stringify(query),
        ).toEqual(referencePage(ordered, query).map((c) => c.id));
      }
    });

    it("gives an empty page for a cursor that names no conversation", async () => {
      for (const take of [5, -5]) expect(await opened.storage.conversationList.page({ cursor: randomUUID(), skip: 1, take })).toEqual([]);
    });

    it("counts every conversation, and sees a new one at once", async () => {
      expect(await opened.storage.conversationList.count()).toBe(60);
      const conversationId = randomUUID();
      await opened.storage.runs.startRun(
        {
          id: randomUUID(),
          conversationId,
          kind: "start",
          input: "x",
          startedAt: new Date(base + 10_000),
          startMark: "s",
          ownerId: "o",
          startCheckpointId: null,
        },
        newConversation("newest"),
      );
      expect(await opened.storage.conversationList.count()).toBe(61);
      expect((await opened.storage.conversationList.page({ skip: 0, take: 1 }))[0]).toMatchObject({ id: conversationId, title: "newest" });
    });
  });
}
