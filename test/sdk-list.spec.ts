// The conversation list store (createConversationList(client)), played through the
// test transport: pages newest first, a run started elsewhere moves its
// conversation to the top as the notice tells it, and after a dropped
// connection the first page is read again. The live list against a real
// server, in a browser, is test/sdk-react.spec.ts's.
import { afterEach, describe, expect, it } from "vitest";
import {
  createConversationList,
  createRunledgerClient,
  memoryStorage,
  type ConversationListStore,
  type RunledgerClient,
} from "../packages/client/src/index.ts";
import { createTestTransport } from "../packages/client/src/testing.ts";
import { until } from "../testkit/streaming.ts";

const clients: RunledgerClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) await client.dispose();
});

function listOf(store: ConversationListStore): string[] {
  return store.getSnapshot().rows.map((r) => r.title);
}

describe("the conversation list", () => {
  it("pages newest first, moves a conversation whose run starts elsewhere to the top, and reads the first page again after a drop", async () => {
    const transport = createTestTransport({ autoplay: false });
    const ids = ["one", "two", "three", "four", "five"].map((title) => transport.addConversation({ title }));
    const client = createRunledgerClient({ transport, storage: memoryStorage() });
    clients.push(client);
    const list = createConversationList(client, { pageSize: 2 });
    await until(() => list.getSnapshot().phase === "ready", "the first page");
    expect(listOf(list)).toEqual(["five", "four"]);
    expect(list.getSnapshot().hasMore).toBe(true);
    await list.loadMore();
    await list.loadMore();
    expect(listOf(list)).toEqual(["five", "four", "three", "two", "one"]);
    expect(list.getSnapshot()).toMatchObject({ hasMore: false, loadingMore: false, error: null });

    const runId = transport.startElsewhere(ids[0]!, "From another tab");
    await until(() => listOf(list)[0] === "one", "the oldest at the top");
    expect(listOf(list)).toEqual(["one", "five", "four", "three", "two"]);
    expect(list.getSnapshot().rows[0]).toMatchObject({ id: ids[0], activeRun: { id: runId, status: "RUNNING" } });
    transport.finish(runId);
    await until(() => list.getSnapshot().rows[0]?.latestRun?.status === "COMPLETED", "its run shown ended");
    expect(list.getSnapshot().rows[0]).toMatchObject({ activeRun: null, messageCount: 2 });

    const reads = () => transport.sent.filter((s) => s.name === "RunledgerConversations").length;
    const before = reads();
    transport.drop();
    await until(() => reads() > before && list.getSnapshot().rows.length === 2, "the first page read again");
    expect(listOf(list)).toEqual(["one", "five"]);
    expect(list.getSnapshot().hasMore).toBe(true);

    // Detached: no more notices change it.
    list.detach();
    transport.startElsewhere(ids[1]!, "Unheard");
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(listOf(list)).toEqual(["one", "five"]);
    expect(list.getSnapshot().attached).toBe(false);
  });
});

describe("client.conversations(), whose store is loaded with the first list", () => {
  it("shows loading until then, and does what was asked meanwhile: attached once loaded, nothing read for a list detached or closed before", async () => {
    const transport = createTestTransport({ autoplay: false });
    transport.addConversation({ title: "only" });
    const client = createRunledgerClient({ transport, storage: memoryStorage() });
    clients.push(client);
    const reads = () => transport.sent.filter((s) => s.name === "RunledgerConversations").length;

    const shown = client.conversations({ attach: false });
    expect(shown.getSnapshot()).toMatchObject({ phase: "loading", attached: false, rows: [] });
    const closed = client.conversations();
    closed.close();
    const detached = client.conversations();
    detached.detach();
    shown.attach();
    expect(shown.getSnapshot().attached).toBe(true);
    await until(() => shown.getSnapshot().phase === "ready", "the list loaded and its first page read");
    expect(shown.getSnapshot().rows.map((r) => r.title)).toEqual(["only"]);
    expect(reads()).toBe(1);
    expect(detached.getSnapshot()).toMatchObject({ phase: "loading", attached: false });
    expect(closed.getSnapshot().attached).toBe(false);

    await detached.refresh();
    expect(reads()).toBe(1);
    detached.attach();
    await until(() => detached.getSnapshot().phase === "ready", "the detached list attached");
    expect(reads()).toBe(2);
    closed.attach();
    await closed.refresh();
    expect(reads()).toBe(2);
    shown.close();
    detached.close();
  });
});
