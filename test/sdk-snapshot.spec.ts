// The conversation snapshot as a pure function of a store's state
// (packages/client/src/snapshot.ts): where a run that stopped early shows what
// it streamed, given what the last read of the conversation says.
import { describe, expect, it } from "vitest";
import { SnapshotBuilder, type ConversationData, type StoreState, type Tracked } from "../packages/client/src/snapshot.ts";
import { emptyRun, liveRun, type ChatMessage, type RunState } from "../packages/client/src/run-log.ts";

function tracked(run: RunState, order: number, endTick: number | null, messages: ChatMessage[] = []): Tracked {
  return { live: { ...liveRun(run), messages }, order, endTick, stop: null, poll: null, refilling: false, refillAgain: false, recorded: true };
}

function stored(id: string, role: "USER" | "ASSISTANT", content: string) {
  return { id, role, content, toolCalls: [], toolCallId: null, name: null };
}

function record(run: RunState) {
  const { id, kind, status, input, errorCode, errorMessage, partialOutput, queuePosition, queueReason, startedAt, finishedAt } = run;
  return { id, kind, status, input, errorCode, errorMessage, partialOutput, queuePosition, queueReason, startedAt, finishedAt };
}

function state(runs: Tracked[], data: ConversationData, tick: number): StoreState {
  return {
    conversationId: data.id,
    phase: "ready",
    base: { data, tick },
    runs: new Map(runs.map((t) => [t.live.run.id, t])),
    past: new Map(),
    outgoing: [],
    connection: { status: "connected", transport: "websocket", reconnects: 0 } as StoreState["connection"],
    attached: true,
    error: null,
    hidden: 0,
    loadingOlder: false,
  };
}

describe("a run that stopped early", () => {
  // The first run was interrupted mid-answer (its text is not in the thread); the next one completed, and
  // the last read holds its question and answer and names it the latest run.
  const interrupted: RunState = { ...emptyRun("run-1", "INTERRUPTED"), errorCode: "INTERRUPTED", lastSeq: 24 };
  const partial: ChatMessage = {
    id: "run-1:m",
    role: "ASSISTANT",
    content: "Half an ",
    toolCalls: [],
    toolCallId: null,
    name: null,
    runId: "run-1",
    state: "streaming",
  };
  const completed: RunState = { ...emptyRun("run-2", "COMPLETED"), startedAt: "2026-12-03T09:00:00.000Z", lastSeq: 12 };
  const data = {
    id: "conversation-1",
    title: "A chat",
    agentName: "default",
    messages: [stored("m1", "USER", "First"), stored("m2", "USER", "Next"), stored("m3", "ASSISTANT", "Echo: Next")],
    activeRun: null,
    latestRun: record(completed),
    pendingInterrupts: [],
    next: [],
    resumable: false,
  } as unknown as ConversationData;

  it("is shown below the thread while it is the conversation's latest run", () => {
    const latest = { ...data, messages: data.messages.slice(0, 1), latestRun: record(interrupted) } as ConversationData;
    const shown = new SnapshotBuilder().build(state([tracked(interrupted, 1, 5, [partial])], latest, 10));
    expect(shown.messages.map((m) => [m.content, m.state])).toEqual([
      ["First", "stored"],
      ["Half an ", "partial"],
    ]);
  });

  it("is not shown once a read names a later run the latest, even when the store applied its end after that read began", () => {
    // As a clean run saw it: the read (tick 3) was under way when the run's end was applied (tick 4).
    const started = { ...interrupted, startedAt: "2026-12-03T08:59:59.000Z" };
    const shown = new SnapshotBuilder().build(state([tracked(started, 1, 4, [partial]), tracked(completed, 2, 2)], data, 3));
    expect(shown.messages.map((m) => [m.content, m.state])).toEqual([
      ["First", "stored"],
      ["Next", "stored"],
      ["Echo: Next", "stored"],
    ]);
  });

  it("is never shown below the answers of a later run, even when its start time is not known (it would sort last)", () => {
    // startedAt null: known only from its events, as after a restart where no read named it again.
    const shown = new SnapshotBuilder().build(state([tracked(interrupted, 1, 5, [partial]), tracked(completed, 2, 8)], data, 10));
    expect(shown.messages.map((m) => m.content)).toEqual(["First", "Next", "Echo: Next"]);
    expect(shown.messages.at(-1)).toMatchObject({ role: "ASSISTANT", content: "Echo: Next", state: "stored" });
  });
});
