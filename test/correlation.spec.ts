// The run → checkpoint edge by timestamp correlation: the merge itself on
// synthetic marks (boundaries, ties within a millisecond, open windows, failed
// tasks), then end to end against what really happened: every checkpoint a run
// saved is recorded from its own CheckpointEvents (published by the
// checkpointer as LangGraph stores each checkpoint), and the correlation must
// agree for starts, resumes, failures, cancels and back-to-back runs, and for
// runs that wait for a person, the answers that resume them, and forks.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uuid6 } from "@langchain/langgraph-checkpoint";
import { v6 } from "@langchain/core/utils/uuid";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { attributeFailures, correlate, firstAppearances, runAt, type AttemptWindow } from "../src/correlation/index.ts";
import { startFakeOllama, defaultResponder, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp } from "../testkit/app.ts";
import { collect, gql, gqlOk, startRun, wsClient } from "../testkit/graphql.ts";
import { RESUME_RUN, START_AGENT_RUN } from "../testkit/documents.ts";
import type { App } from "../src/app.ts";
import { LOCAL_PRINCIPAL } from "../src/domain/principal.ts";

const NODE = Uint8Array.from([1, 2, 3, 4, 5, 6]);

/** A v6 id at a given millisecond and sub-millisecond counter, as LangGraph's uuid6 builds them. */
function mark(msecs: number, nsecs: number, clockseq = 0): string {
  return v6({ msecs, nsecs, clockseq, node: NODE });
}

interface TestRun extends AttemptWindow {
  id: string;
}

function run(id: string, startMark: string, endMark: string | null, status = "completed", errorMessage: string | null = null): TestRun {
  return { id, startMark, endMark, status, errorMessage };
}

const ids = (list: ({ id: string } | null)[]) => list.map((r) => r?.id ?? null);

describe("the merge on synthetic marks", () => {
  it("includes checkpoints exactly at a window's start and exactly at its end, and nothing outside", () => {
    const T = Date.UTC(2026, 10, 30, 14, 2);
    const before = mark(T, 0, 1);
    const start = mark(T, 1, 2);
    const middle = mark(T + 5, 0, 3);
    const end = mark(T + 9, 0, 4);
    const after = mark(T + 9, 1, 5);
    const runs = [run("r1", start, end)];
    expect(ids(correlate(runs, [before, start, middle, end, after]))).toEqual([null, "r1", "r1", "r1", null]);
    for (const [id, expected] of [
      [before, null],
      [start, "r1"],
      [end, "r1"],
      [after, null],
    ] as const) {
      expect(runAt(runs, id)?.id ?? null).toBe(expected);
    }
  });

  it("separates back-to-back runs that share one millisecond, where the ISO timestamps tie", () => {
    const T = Date.UTC(2026, 10, 30, 14, 2, 0, 500);
    // One millisecond, seven moments: run 1 ends and run 2 starts between two checkpoints.
    const moments = [0, 1, 2, 3, 4, 5, 6].map((n) => mark(T, n, n % 2 ? 0x3fff : 0x2000));
    const [s1, c1, e1, s2, c2, e2, c3] = moments as [string, string, string, string, string, string, string];
    const ms = (id: string) => {
      // The 60-bit timestamp of a v6 id, in 100 ns units since 1582-10-15.
      const hex = id.replace(/-/g, "");
      const ticks = BigInt(`0x${hex.slice(0, 12)}${hex.slice(13, 16)}`);
      return Number(ticks / 10_000n - 12_219_292_800_000n);
    };
    // Every mark carries the same millisecond: a comparison of ts values could not tell them apart.
    expect(new Set(moments.map(ms))).toEqual(new Set([T]));
    const runs = [run("r1", s1, e1), run("r2", s2, e2)];
    expect(ids(correlate(runs, [c1, c2, c3]))).toEqual(["r1", "r2", null]);
  });

  it("leaves a running run's window open", () => {
    const T = Date.UTC(2026, 10, 30, 15);
    const runs = [run("r1", mark(T, 0), mark(T + 10, 0)), run("r2", mark(T + 20, 0), null, "running")];
    expect(ids(correlate(runs, [mark(T + 15, 0), mark(T + 20, 0), mark(T + 10_000_000, 0)]))).toEqual([null, "r2", "r2"]);
  });

  it("gives nothing a run when there are no runs, and no run a checkpoint when there are none", () => {
    expect(correlate([], [mark(1, 0)])).toEqual([null]);
    expect(correlate([run("r1", mark(1, 0), null)], [])).toEqual([]);
  });

  it("agrees with a brute-force search on random histories", () => {
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let trial = 0; trial < 200; trial += 1) {
      const moments = Array.from({ length: 60 }, (_, i) => mark(1_700_000_000_000 + i * 3 + Math.floor(random() * 3), i));
      moments.sort();
      // Non-overlapping windows over the moments; the last may be open.
      const runs: TestRun[] = [];
      let cursor = 0;
      while (cursor < moments.length - 1 && runs.length < 8) {
        const startIdx = cursor + Math.floor(random() * 5);
        const endIdx = startIdx + Math.floor(random() * 8);
        if (endIdx >= moments.length) break;
        runs.push(run(`r${runs.length}`, moments[startIdx]!, moments[endIdx]!));
        cursor = endIdx + 1;
      }
      if (runs.length && random() < 0.3) runs[runs.length - 1]!.endMark = null;
      const checkpoints = moments.filter(() => random() < 0.5);
      const brute = checkpoints.map((c) => runs.find((r) => r.startMark <= c && (r.endMark === null || c <= r.endMark))?.id ?? null);
      expect(ids(correlate(runs, checkpoints))).toEqual(brute);
      expect(checkpoints.map((c) => runAt(runs, c)?.id ?? null)).toEqual(brute);
    }
  });

  it("orders ids from LangGraph's generator by call, also within one millisecond", () => {
    const generated = Array.from({ length: 5_000 }, (_, i) => uuid6(i % 7 === 0 ? -2 : i));
    expect([...generated].sort()).toEqual(generated);
    expect(new Set(generated).size).toBe(generated.length);
  });
});

describe("attributing failed tasks", () => {
  const T = Date.UTC(2026, 10, 30, 16);
  const at = (n: number) => mark(T + n, 0);

  it("gives an error to the failed run, not to the resume that got past the step", () => {
    // r1 fails at checkpoint 12 (its pending step); r2 resumes and saves checkpoint 31.
    const runs = [run("r1", at(10), at(15), "failed", "boom: cause"), run("r2", at(30), at(35))];
    expect(ids(attributeFailures(runs, [at(11), at(12), at(31)], [{ checkpointId: at(12), message: "boom" }]))).toEqual(["r1"]);
  });

  it("gives a replaced error to the latest failed attempt, skipping a cancel that wrote nothing", () => {
    const runs = [
      run("r1", at(10), at(15), "failed", "model not found"),
      run("r2", at(20), at(25), "failed", "model error"),
      run("r3", at(30), at(35), "cancelled", "the run was cancelled"),
      run("r4", at(40), at(45)),
    ];
    const checkpointIds = [at(11), at(12), at(41)];
    expect(ids(attributeFailures(runs, checkpointIds, [{ checkpointId: at(12), message: "model error" }]))).toEqual(["r2"]);
    // Had the first failure's write survived, it would be the first run's.
    expect(ids(attributeFailures(runs, checkpointIds, [{ checkpointId: at(12), message: "model not found" }]))).toEqual(["r1"]);
  });

  it("gives an error of the pending step to the running run working on it", () => {
    const runs = [run("r1", at(10), at(15), "failed", "x"), run("r2", at(20), null, "running")];
    expect(ids(attributeFailures(runs, [at(11), at(12)], [{ checkpointId: at(12), message: "y" }]))).toEqual(["r2"]);
  });

  it("attributes nothing when no run was running at the checkpoint or it is gone", () => {
    const runs = [run("r1", at(20), at(25), "failed", "x")];
    // Checkpoint 12 came from a state update before any run; r1 started after C' (13).
    expect(ids(attributeFailures(runs, [at(12), at(13)], [{ checkpointId: at(12), message: "x" }]))).toEqual([null]);
    expect(ids(attributeFailures(runs, [at(21)], [{ checkpointId: at(22), message: "x" }]))).toEqual([null]);
  });
});

describe("first appearances of messages", () => {
  it("lists each message once, at the first checkpoint that holds it", () => {
    const user = new HumanMessage({ id: "u1", content: "hi" });
    const reply = new AIMessage({ id: "a1", content: "hello" });
    const result = firstAppearances([
      { checkpointId: "c1", messages: [] },
      { checkpointId: "c2", messages: [user] },
      { checkpointId: "c3", messages: [user, reply] },
      { checkpointId: "c4", messages: [user, reply] },
    ]);
    expect(result.map((r) => [r.message.id, r.checkpointId])).toEqual([
      ["u1", "c2"],
      ["a1", "c3"],
    ]);
  });
});

const RUN_CHECKPOINTS = /* GraphQL */ `
  subscription RunCheckpoints($runId: ID!) {
    runEvents(runId: $runId) {
      __typename
      runId
      ... on TokenEvent { text }
      ... on CheckpointEvent { checkpointId checkpoint { id run { id } } }
      ... on RunStatusEvent { status errorCode errorMessage }
    }
  }
`;

const CORRELATED = /* GraphQL */ `
  query Correlated($id: ID!) {
    conversation(id: $id) {
      checkpoints(first: 100) { pageInfo { hasNextPage } edges { node { id run { id } } } }
      runs(first: 100) {
        edges { node { id kind status errorCode checkpoints { id } messages { role content toolCalls { name args } } failedTasks { taskId node message checkpoint { id } } } }
      }
    }
  }
`;

describe("the correlation against what each run really saved", () => {
  let fake: FakeOllama;
  let app: App;
  let client: ReturnType<typeof wsClient>;

  beforeAll(async () => {
    fake = await startFakeOllama();
    // "careful" waits for approval before each calculation.
    const config = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "runledger-correlation-")), "agents.json");
    fs.writeFileSync(
      config,
      JSON.stringify({ agents: { default: { type: "chat" }, careful: { type: "chat", tools: ["calculator"], requireApproval: ["calculator"] } } }),
    );
    app = await startTestApp({ ollamaUrl: fake.url, env: { RUN_HEARTBEAT_MS: "60000", RUN_LEASE_MS: "600000", RUNLEDGER_CONFIG: config } });
    client = wsClient(app.url);
  });
  afterAll(async () => {
    await client?.dispose();
    await app?.close();
    await fake?.close();
  });

  /** Follows a run's events from its first; returns the checkpoints it saved, as its own events report them. */
  async function follow(runId: string, whileRunning?: (events: any[]) => Promise<void>) {
    const sub = collect(client, RUN_CHECKPOINTS, { runId });
    if (whileRunning) await whileRunning(sub.results);
    const events = (await sub.done).map((r: any) => r.runEvents);
    const saved = events.filter((e) => e.__typename === "CheckpointEvent");
    const final = events.at(-1);
    return { runId, saved, status: final.status as string, errorCode: final.errorCode as string | null };
  }

  async function resume(conversationId: string) {
    const { resumeRun } = await gqlOk(app.url, RESUME_RUN, { conversationId });
    expect(resumeRun.__typename).toBe("ResumeRunSuccess");
    return resumeRun.run.id as string;
  }

  it("agrees for starts, resumes, failures, cancels and back-to-back runs", async () => {
    fake.setResponder(defaultResponder);
    const followed: Awaited<ReturnType<typeof follow>>[] = [];

    // A start that goes through the tools loop.
    const { runId: first } = await startRun(app.url, "Please calculate 6 * 7");
    const { conversation } = await gqlOk(app.url, `query($id: ID!) { run(id: $id) { conversation { id } } }`, { id: first }).then((d) => d.run);
    const conversationId = conversation.id as string;
    followed.push(await follow(first));

    // A start that fails (model not pulled), a resume that fails again on the same
    // pending step (an error line from the model), and a resume that completes it.
    fake.enqueue({ kind: "notFound" });
    followed.push(await follow((await startRun(app.url, "And now?", conversationId)).runId));
    fake.enqueue({ kind: "errorLine", tokens: ["Par"], error: "model runner crashed" });
    followed.push(await follow(await resume(conversationId)));
    followed.push(await follow(await resume(conversationId)));

    // A start cancelled while the model is silent mid-answer, then resumed.
    fake.enqueue({ kind: "silence", tokens: ["Thinking"] });
    const { runId: cancelled } = await startRun(app.url, "Take your time", conversationId);
    followed.push(
      await follow(cancelled, async (events) => {
        while (!events.some((e) => e.runEvents.__typename === "TokenEvent")) await new Promise((r) => setTimeout(r, 10));
        const { cancelRun } = await gqlOk(app.url, `mutation($id: ID!) { cancelRun(input: { runId: $id }) { __typename } }`, { id: cancelled });
        expect(cancelRun.__typename).toBe("CancelRunSuccess");
      }),
    );
    followed.push(await follow(await resume(conversationId)));

    // A start whose model connection drops mid-stream, superseded by a new message.
    fake.enqueue({ kind: "dropMidStream", tokens: ["Half"] });
    followed.push(await follow((await startRun(app.url, "Tell me more", conversationId)).runId));
    followed.push(await follow((await startRun(app.url, "Never mind, calculate 2 + 2", conversationId)).runId));

    // Back to back: each run starts the moment the previous one is recorded.
    const backToBack: string[] = [];
    for (let i = 0; i < 6; i += 1) {
      const { run } = await app.services.runs.startRun({ conversationId, message: i % 2 ? `calculate ${i} + ${i}` : `quick ${i}` }, LOCAL_PRINCIPAL);
      backToBack.push(run.id);
      await app.services.runs.whenFinished(run.id);
    }
    for (const runId of backToBack) followed.push(await follow(runId));

    expect(followed.map((f) => [f.status, f.errorCode])).toEqual([
      ["COMPLETED", null],
      ["FAILED", "MODEL_NOT_FOUND"],
      ["FAILED", "MODEL_ERROR"],
      ["COMPLETED", null],
      ["CANCELLED", "CANCELLED"],
      ["COMPLETED", null],
      ["FAILED", expect.any(String)],
      ["COMPLETED", null],
      ...backToBack.map(() => ["COMPLETED", null]),
    ]);

    // What really happened, from the runs' own events.
    const producedBy = new Map<string, string>();
    // A failed step saves no checkpoint: the resume that failed again saved none.
    expect(followed.map((f) => f.saved.length > 0)).toEqual(followed.map((_, i) => i !== 2));
    for (const f of followed) {
      for (const event of f.saved) {
        expect(producedBy.has(event.checkpointId)).toBe(false);
        producedBy.set(event.checkpointId, f.runId);
        // Resolved when the event was delivered: the live correlation already agreed.
        expect(event.checkpoint.run?.id).toBe(f.runId);
      }
    }

    const { conversation: read } = await gqlOk(app.url, CORRELATED, { id: conversationId });
    const stored = read.checkpoints.edges.map((e: any) => e.node);
    expect(read.checkpoints.pageInfo.hasNextPage).toBe(false);
    // Every stored checkpoint was reported by exactly the run the correlation names.
    expect(stored.map((c: any) => c.id).sort()).toEqual([...producedBy.keys()].sort());
    for (const checkpoint of stored) expect([checkpoint.id, checkpoint.run?.id]).toEqual([checkpoint.id, producedBy.get(checkpoint.id)]);
    const runs = read.runs.edges.map((e: any) => e.node);
    expect(runs.map((r: any) => r.id)).toEqual(followed.map((f) => f.runId));
    for (const r of runs) {
      expect(r.checkpoints.map((c: any) => c.id)).toEqual(followed.find((f) => f.runId === r.id)!.saved.map((e: any) => e.checkpointId));
    }

    // Failed tasks: LangGraph keeps one error per pending step, replaced by a
    // later failure of the same step, so the model-not-found error was overwritten
    // by the resume that failed with an error line; the cancel wrote none.
    const failed = runs.map((r: any) => r.failedTasks.map((t: any) => [t.node, t.message]));
    expect(failed[1]).toEqual([]);
    expect(failed[2]).toEqual([["agent", expect.stringContaining("model runner crashed")]]);
    expect(failed[4]).toEqual([]);
    expect(failed[6]).toEqual([["agent", expect.any(String)]]);
    for (const i of [0, 3, 5, 7, ...backToBack.map((_, n) => 8 + n)]) expect(failed[i]).toEqual([]);
    // The error write hangs off the checkpoint the failed step ran from, which the failed start itself saved.
    expect(producedBy.get(runs[6].failedTasks[0].checkpoint.id)).toBe(runs[6].id);
  });

  it("agrees for runs that wait for a person, the answers that resume them, and a fork's runs", async () => {
    fake.setResponder(defaultResponder);
    const answer = async (conversationId: string, decision: "approve" | "reject") => {
      const { pendingInterrupts } = (
        await gqlOk(app.url, `query($id: ID!) { conversation(id: $id) { pendingInterrupts { id value } } }`, { id: conversationId })
      ).conversation;
      expect(pendingInterrupts).toHaveLength(1);
      const [asked] = pendingInterrupts;
      const value = { toolCalls: asked.value.toolCalls.map((c: any) => ({ id: c.id, decision, ...(decision === "reject" ? { reason: "not now" } : {}) })) };
      const { resumeRun } = await gqlOk(
        app.url,
        `mutation($id: ID!, $responses: [InterruptResponseInput!]) { resumeRun(input: { conversationId: $id, responses: $responses }) { __typename ... on ResumeRunSuccess { run { id } } } }`,
        { id: conversationId, responses: [{ interruptId: asked.id, value }] },
      );
      expect(resumeRun.__typename).toBe("ResumeRunSuccess");
      return resumeRun.run.id as string;
    };
    const startWith = async (message: string, conversationId?: string) => {
      const { startRun: started } = await gqlOk(app.url, START_AGENT_RUN, { message, agent: "careful", conversationId });
      return { runId: started.run.id as string, conversationId: started.conversation.id as string };
    };

    // Asks, is approved; asks again, is rejected; then a plain answer.
    const first = await startWith("Please calculate 6 * 7");
    const conversationId = first.conversationId;
    const followed = [await follow(first.runId)];
    followed.push(await follow(await answer(conversationId, "approve")));
    followed.push(await follow((await startWith("Please calculate 2 + 2", conversationId)).runId));
    followed.push(await follow(await answer(conversationId, "reject")));
    followed.push(await follow((await startWith("Thanks", conversationId)).runId));
    expect(followed.map((f) => f.status)).toEqual(["WAITING", "COMPLETED", "WAITING", "COMPLETED", "COMPLETED"]);
    // The pause is a checkpoint of the run that asked; the answer's run starts after it.
    for (const f of followed) expect(f.saved.length).toBeGreaterThan(0);

    const producedBy = new Map<string, string>();
    for (const f of followed) for (const event of f.saved) producedBy.set(event.checkpointId, f.runId);
    const { conversation: read } = await gqlOk(app.url, CORRELATED, { id: conversationId });
    const stored = read.checkpoints.edges.map((e: any) => e.node);
    expect(stored.map((c: any) => c.id).sort()).toEqual([...producedBy.keys()].sort());
    for (const checkpoint of stored) expect([checkpoint.id, checkpoint.run?.id]).toEqual([checkpoint.id, producedBy.get(checkpoint.id)]);
    for (const r of read.runs.edges.map((e: any) => e.node)) {
      expect(r.checkpoints.map((c: any) => c.id)).toEqual(followed.find((f) => f.runId === r.id)!.saved.map((e: any) => e.checkpointId));
    }
    // Each run's messages are the ones it added: the question and the call that waits;
    // the approved call's result and the answer; the rejection the model heard.
    const calls = (expression: string) => [{ name: "calculator", args: { expression } }];
    const said = (runs: any[]) => runs.map((r: any) => r.messages.map((m: any) => [m.role, m.content, ...(m.toolCalls.length ? [m.toolCalls] : [])]));
    const runsRead = read.runs.edges.map((e: any) => e.node);
    expect(said(runsRead)).toEqual([
      [
        ["USER", "Please calculate 6 * 7"],
        ["ASSISTANT", "", calls("6 * 7")],
      ],
      [
        ["TOOL", "42"],
        ["ASSISTANT", "The result is 42."],
      ],
      [
        ["USER", "Please calculate 2 + 2"],
        ["ASSISTANT", "", calls("2 + 2")],
      ],
      [
        ["TOOL", "not now"],
        ["ASSISTANT", "The result is not now."],
      ],
      [
        ["USER", "Thanks"],
        ["ASSISTANT", "Echo: Thanks"],
      ],
    ]);
    // Waiting is no failure, and nothing failed.
    for (const r of runsRead) expect(r.failedTasks).toEqual([]);

    // A fork from the first pause: the copies belong to no run; the fork's own runs
    // (the answer to the copied question, then a new message) own what they save.
    const pause = followed[0]!.saved.at(-1).checkpointId as string;
    const { forkConversation } = await gqlOk(
      app.url,
      `mutation($id: ID!) { forkConversation(input: { checkpointId: $id }) { __typename ... on ForkConversationSuccess { conversation { id } } } }`,
      { id: pause },
    );
    expect(forkConversation.__typename).toBe("ForkConversationSuccess");
    const forkId = forkConversation.conversation.id as string;
    const copies = (await gqlOk(app.url, CORRELATED, { id: forkId })).conversation.checkpoints.edges.map((e: any) => e.node);
    expect(copies).toHaveLength(followed[0]!.saved.length);
    for (const copy of copies) expect(copy.run).toBeNull();
    // The copy stops before the question: the fork's resume asks it again, as its own.
    expect(
      (await gqlOk(app.url, `query($id: ID!) { conversation(id: $id) { next resumable pendingInterrupts { id } } }`, { id: forkId })).conversation,
    ).toEqual({ next: ["approve"], resumable: true, pendingInterrupts: [] });
    const reasked = await follow(await resume(forkId));
    expect(reasked.status).toBe("WAITING");
    const forkRuns = [reasked, await follow(await answer(forkId, "approve")), await follow((await startWith("Please calculate 1 + 1", forkId)).runId)];
    expect(forkRuns.map((f) => f.status)).toEqual(["WAITING", "COMPLETED", "WAITING"]);
    const { conversation: forked } = await gqlOk(app.url, CORRELATED, { id: forkId });
    const forkOwners = new Map<string, string | null>(copies.map((c: any) => [c.id, null]));
    for (const f of forkRuns) for (const event of f.saved) forkOwners.set(event.checkpointId, f.runId);
    expect(forked.checkpoints.edges.map((e: any) => [e.node.id, e.node.run?.id ?? null]).sort()).toEqual([...forkOwners.entries()].sort());
    // The copied history is no run's: the fork's resume only asks again (no message of
    // its own), the answer adds the call's result, the new question its own call.
    const forkRunsRead = forked.runs.edges.map((e: any) => e.node);
    expect(forkRunsRead.map((r: any) => r.id)).toEqual(forkRuns.map((f) => f.runId));
    expect(said(forkRunsRead)).toEqual([
      [],
      [
        ["TOOL", "42"],
        ["ASSISTANT", "The result is 42."],
      ],
      [
        ["USER", "Please calculate 1 + 1"],
        ["ASSISTANT", "", calls("1 + 1")],
      ],
    ]);
    for (const r of forkRunsRead) expect(r.failedTasks).toEqual([]);
    // The source did not move.
    expect((await gqlOk(app.url, CORRELATED, { id: conversationId })).conversation).toEqual(read);
  });

  it("agrees for a fork of a failed run's checkpoint: the source's failure stays the source's, the fork's runs list only their own", async () => {
    fake.setResponder(defaultResponder);
    fake.enqueue({ kind: "errorLine", tokens: ["Half "], error: "the model fell over" });
    const { runId: failedId, conversationId } = await startRun(app.url, "Fork a failure.");
    const failed = await follow(failedId);
    expect([failed.status, failed.errorCode]).toEqual(["FAILED", "MODEL_ERROR"]);
    const { conversation: source } = await gqlOk(app.url, CORRELATED, { id: conversationId });
    const [sourceRun] = source.runs.edges.map((e: any) => e.node);
    // The failed step ran from the failed run's last checkpoint: the error is recorded there, and is the failed run's.
    const failedAt = failed.saved.at(-1).checkpointId as string;
    expect(sourceRun.messages).toEqual([{ role: "USER", content: "Fork a failure.", toolCalls: [] }]);
    expect(sourceRun.failedTasks).toEqual([{ taskId: expect.any(String), node: "agent", message: "the model fell over", checkpoint: { id: failedAt } }]);

    const { forkConversation } = await gqlOk(
      app.url,
      `mutation($id: ID!) { forkConversation(input: { checkpointId: $id }) { __typename ... on ForkConversationSuccess { conversation { id } } } }`,
      { id: failedAt },
    );
    expect(forkConversation.__typename).toBe("ForkConversationSuccess");
    const forkId = forkConversation.conversation.id as string;
    const runsOfFork = async () => (await gqlOk(app.url, CORRELATED, { id: forkId })).conversation.runs.edges.map((e: any) => e.node);

    // Soft expectations: each of the fork's runs is reported, not only the first that is wrong.
    // A resume on the fork, cancelled while the model is silent: it failed nothing, before or after the cancel.
    fake.enqueue({ kind: "silence", tokens: ["Thinking"] });
    const cancelledId = await resume(forkId);
    const cancelled = await follow(cancelledId, async (events) => {
      while (!events.some((e) => e.runEvents.__typename === "TokenEvent")) await new Promise((r) => setTimeout(r, 10));
      expect.soft((await runsOfFork())[0].failedTasks, "a running resume on the fork").toEqual([]);
      const { cancelRun } = await gqlOk(app.url, `mutation($id: ID!) { cancelRun(input: { runId: $id }) { __typename } }`, { id: cancelledId });
      expect(cancelRun.__typename).toBe("CancelRunSuccess");
    });
    expect(cancelled.status).toBe("CANCELLED");
    expect.soft((await runsOfFork())[0].failedTasks, "a cancelled resume on the fork").toEqual([]);

    // A resume that fails on the same step: its own failure, and only that.
    fake.enqueue({ kind: "errorLine", tokens: ["Again "], error: "the fork broke too" });
    const failedAgain = await follow(await resume(forkId));
    expect(failedAgain.status).toBe("FAILED");
    const afterFailure = await runsOfFork();
    expect
      .soft(
        afterFailure[1].failedTasks.map((t: any) => t.message),
        "the fork's failed resume",
      )
      .toEqual(["the fork broke too"]);

    // A resume that completes the step: the answer is its only message, and it failed nothing.
    const completed = await follow(await resume(forkId));
    expect(completed.status).toBe("COMPLETED");
    const done = await runsOfFork();
    expect(done.map((r: any) => r.status)).toEqual(["CANCELLED", "FAILED", "COMPLETED"]);
    expect(done[2].messages).toEqual([{ role: "ASSISTANT", content: "Echo: Fork a failure.", toolCalls: [] }]);
    expect(done[2].failedTasks).toEqual([]);
    expect.soft(done[0].failedTasks, "the cancelled resume, once the step completed").toEqual([]);
    expect
      .soft(
        done[1].failedTasks.map((t: any) => t.message),
        "the failed resume, once the step completed",
      )
      .toEqual(["the fork broke too"]);
    // The source did not move, and its failure is still its failed run's.
    expect((await gqlOk(app.url, CORRELATED, { id: conversationId })).conversation).toEqual(source);
  });

  it("answers the same through node(id) as through the conversation", async () => {
    const { conversations } = await gqlOk(
      app.url,
      `{ conversations(first: 1) { edges { node { checkpoints(last: 3) { edges { node { id run { id } } } } } } } }`,
    );
    const nodes = conversations.edges[0].node.checkpoints.edges.map((e: any) => e.node);
    expect(nodes).toHaveLength(3);
    for (const node of nodes) {
      const { node: viaNode } = await gqlOk(app.url, `query($id: ID!) { node(id: $id) { __typename id ... on Checkpoint { run { id } } } }`, { id: node.id });
      expect(viaNode).toEqual({ __typename: "Checkpoint", id: node.id, run: node.run });
    }
    const missing = await gql(app.url, `query { node(id: "1f1eca6f-0000-6000-8000-000000000000") { id } }`);
    expect(missing).toEqual({ data: { node: null } });
  });
});
