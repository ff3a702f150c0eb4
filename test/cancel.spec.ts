// cancelRun for real: the model's HTTP request closes at once (also before the
// first token), a running tool sees the run's abort signal, the run ends
// CANCELLED with what was streamed kept, the pending step stays resumable, other
// runs go on, and a cancel racing the run's own finish leaves one terminal status.
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { tool } from "@langchain/core/tools";
import { z } from "zod";
import { defaultResponder, splitTokens, startFakeOllama, type FakeOllama, type FakeStep } from "../testkit/fake-ollama.ts";
import { tempDatabaseUrl, waitForRun } from "../testkit/app.ts";
import { collect, gql, gqlOk, startRun, wsClient } from "../testkit/graphql.ts";
import { CANCEL_RUN, CONVERSATION, RESUME_RUN, RUN, RUN_EVENTS } from "../testkit/documents.ts";
import { loadConfig } from "../src/config.ts";
import { createLogger } from "../src/logger.ts";
import { startApp, type App } from "../src/app.ts";
import { builtinTools } from "../src/agent/tools.ts";
import { LOCAL_PRINCIPAL } from "../src/domain/principal.ts";

/**
 * A tool that takes as long as it is told and honors the abort signal LangGraph
 * hands it, as a network or database tool would. The built-in tools answer at
 * once, so there is nothing of theirs to interrupt; this one is injected through
 * startApp's overrides. Each call is recorded with how it ended.
 */
const toolCalls: { started: number; ended?: "finished" | "aborted"; reason?: unknown }[] = [];
let toolHoldMs = 0;
const slowLookup = tool(
  async ({ key }, config) => {
    const call: (typeof toolCalls)[number] = { started: Date.now() };
    toolCalls.push(call);
    const signal = config?.signal;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        call.ended = "finished";
        resolve();
      }, toolHoldMs);
      signal?.addEventListener("abort", () => {
        clearTimeout(timer);
        call.ended = "aborted";
        call.reason = signal.reason;
        reject(signal.reason);
      });
    });
    return `value of ${key}`;
  },
  {
    name: "slow_lookup",
    description: "Looks a key up in a slow directory.",
    schema: z.object({ key: z.string() }),
    // A lookup changes nothing, and says so as MCP tools do: a call cut off by a cancel may run again.
    metadata: { annotations: { readOnlyHint: true } },
  },
);

let fake: FakeOllama;
let app: App;

beforeAll(async () => {
  fake = await startFakeOllama();
  const config = loadConfig({ PORT: "0", DATABASE_URL: tempDatabaseUrl("runledger-cancel-").url, OLLAMA_HOST: fake.url, LOG_LEVEL: "silent" });
  app = await startApp(config, createLogger(config.logLevel), { tools: [...builtinTools(), slowLookup] });
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});
beforeEach(() => {
  fake.setResponder(defaultResponder);
  toolCalls.length = 0;
  toolHoldMs = 0;
});

const TOOL_CALLS = /* GraphQL */ `
  query ToolCalls($id: ID!) {
    run(id: $id) { toolCalls { name args state attempt result finishedAt } }
  }
`;

async function cancel(runId: string) {
  return (await gqlOk(app.url, CANCEL_RUN, { runId })).cancelRun;
}

async function conversation(id: string) {
  return (await gqlOk(app.url, CONVERSATION, { id })).conversation;
}

/** Steps chosen by the latest user message, so concurrent runs get their own script. */
function respondBy(script: Record<string, () => FakeStep>) {
  fake.setResponder((request) => {
    const lastUser = request.messages.findLast((m) => m.role === "user")?.content ?? "";
    const entry = Object.entries(script).find(([word]) => lastUser.includes(word));
    return entry ? entry[1]() : defaultResponder(request);
  });
}

describe("cancelRun stops the model request at once", () => {
  it("before the first token: the request closes, the run is CANCELLED, and resumeRun completes the pending step", async () => {
    fake.enqueue({ kind: "hangBeforeHeaders" });
    const { runId, conversationId } = await startRun(app.url, "Tell me a story");
    await vi.waitFor(() => expect(fake.openChatRequests()).toBe(1));

    const result = await cancel(runId);
    expect(result).toMatchObject({ __typename: "CancelRunSuccess", run: { id: runId, status: "CANCELLED", errorCode: "CANCELLED", partialOutput: null } });
    expect(result.run.finishedAt).not.toBeNull();
    // The HTTP request to the model is really closed, not left hanging until it answers.
    await vi.waitFor(() => expect(fake.openChatRequests()).toBe(0));

    const before = await conversation(conversationId);
    expect(before).toMatchObject({ next: ["agent"], resumable: true, activeRun: null, latestRun: { id: runId, status: "CANCELLED" } });
    expect(before.messages.map((m: any) => [m.role, m.content])).toEqual([["USER", "Tell me a story"]]);

    const { resumeRun } = await gqlOk(app.url, RESUME_RUN, { conversationId });
    expect(resumeRun.__typename).toBe("ResumeRunSuccess");
    expect((await waitForRun(app.url, resumeRun.run.id)).status).toBe("COMPLETED");
    const after = await conversation(conversationId);
    expect(after.next).toEqual([]);
    expect(after.messages.map((m: any) => [m.role, m.content])).toEqual([
      ["USER", "Tell me a story"],
      ["ASSISTANT", "Echo: Tell me a story"],
    ]);
  });

  it("mid-stream: keeps the streamed text as partialOutput and ends the subscription with CANCELLED", async () => {
    fake.enqueue({ kind: "silence", tokens: ["Once ", "upon ", "a "] });
    const { runId } = await startRun(app.url, "Another story");
    const client = wsClient(app.url);
    try {
      const sub = collect(client, RUN_EVENTS, { runId });
      await vi.waitFor(() => expect(sub.results.filter((r) => r.runEvents.__typename === "TokenEvent")).toHaveLength(3));
      const result = await cancel(runId);
      expect(result.run).toMatchObject({ status: "CANCELLED", errorCode: "CANCELLED", partialOutput: "Once upon a " });
      const events = (await sub.done).map((r) => r.runEvents);
      expect(events.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "CANCELLED", errorCode: "CANCELLED" });
      expect(events.filter((e) => e.__typename === "RunStatusEvent" && e.status !== "RUNNING")).toHaveLength(1);
      await vi.waitFor(() => expect(fake.openChatRequests()).toBe(0));
      const { run } = await gqlOk(app.url, RUN, { id: runId });
      expect(run).toMatchObject({ status: "CANCELLED", partialOutput: "Once upon a " });
    } finally {
      await client.dispose();
    }
  });
});

describe("cancelRun stops a running tool", () => {
  it("the tool sees the run's abort signal, the run ends CANCELLED at once, and the tools step stays resumable", async () => {
    toolHoldMs = 60_000;
    fake.enqueue({ kind: "toolCalls", calls: [{ name: "slow_lookup", args: { key: "alpha" } }] });
    const { runId, conversationId } = await startRun(app.url, "Look up alpha");
    await vi.waitFor(() => expect(toolCalls).toHaveLength(1));

    const result = await cancel(runId);
    expect(result.run).toMatchObject({ status: "CANCELLED", errorCode: "CANCELLED" });
    expect(toolCalls[0]).toMatchObject({ ended: "aborted" });
    expect((toolCalls[0]!.reason as Error).name).toBe("RunAbortReason");

    const pending = await conversation(conversationId);
    expect(pending).toMatchObject({ next: ["tools"], resumable: true });
    expect(pending.messages.at(-1)).toMatchObject({ role: "ASSISTANT", toolCalls: [{ name: "slow_lookup", args: { key: "alpha" } }] });

    // The cut-off call has no outcome: the journal shows it in doubt.
    expect((await gqlOk(app.url, TOOL_CALLS, { id: runId })).run.toolCalls).toEqual([
      { name: "slow_lookup", args: { key: "alpha" }, state: "IN_DOUBT", attempt: 1, result: null, finishedAt: null },
    ]);

    // The resume runs the interrupted read-only tool again, as its second attempt, to the end; then the model answers.
    toolHoldMs = 0;
    const { resumeRun } = await gqlOk(app.url, RESUME_RUN, { conversationId });
    expect((await waitForRun(app.url, resumeRun.run.id)).status).toBe("COMPLETED");
    expect(toolCalls.map((c) => c.ended)).toEqual(["aborted", "finished"]);
    expect((await gqlOk(app.url, TOOL_CALLS, { id: resumeRun.run.id })).run.toolCalls).toEqual([
      { name: "slow_lookup", args: { key: "alpha" }, state: "SUCCEEDED", attempt: 2, result: "value of alpha", finishedAt: expect.any(String) },
    ]);
    const done = await conversation(conversationId);
    expect(done.messages.slice(-2).map((m: any) => [m.role, m.content])).toEqual([
      ["TOOL", "value of alpha"],
      ["ASSISTANT", "The result is value of alpha."],
    ]);
  });
});

describe("cancelRun touches only its own run", () => {
  it("cancelling one of two concurrent runs leaves the other to complete with its full answer", async () => {
    respondBy({
      doomed: () => ({ kind: "silence", tokens: ["I will "] }),
      survivor: () => ({ kind: "trickle", tokens: splitTokens("slow and steady wins"), delayMs: 40 }),
    });
    const doomed = await startRun(app.url, "the doomed one");
    const survivor = await startRun(app.url, "the survivor");
    await vi.waitFor(() => expect(fake.openChatRequests()).toBe(2));

    expect((await cancel(doomed.runId)).run.status).toBe("CANCELLED");
    const finished = await waitForRun(app.url, survivor.runId);
    expect(finished).toMatchObject({ status: "COMPLETED", errorCode: null, partialOutput: null });
    expect((await conversation(survivor.conversationId)).messages.at(-1)).toMatchObject({ role: "ASSISTANT", content: "slow and steady wins" });
    expect((await gqlOk(app.url, RUN, { id: doomed.runId })).run).toMatchObject({ status: "CANCELLED", partialOutput: "I will " });
  });
});

describe("a cancel racing the run's own finish", () => {
  it("leaves exactly one terminal status, the one cancelRun reported, every time", async () => {
    const TOKENS = 8;
    fake.setResponder((request) => ({
      kind: "text",
      tokens: splitTokens(`${request.messages.at(-1)?.content} `.repeat(TOKENS)).slice(0, TOKENS),
      delayMs: 30,
    }));
    type Trigger = { point: string; via: "api" | "service"; reached: (event: { type: string; status?: string }, tokensSeen: number) => boolean };
    // The cancel goes out the moment a given point of the run is seen, so the sweep
    // covers its whole life on a fast or a slow machine: while it streams, as its
    // last checkpoint is saved (the run is finishing and about to record its
    // outcome), and once it has ended. Over the API the cancel lands a request's
    // latency later; from the event bus in this process it lands at once.
    const triggers: Trigger[] = [
      { point: "first token", via: "api", reached: (e) => e.type === "token" },
      { point: "last token", via: "api", reached: (e, n) => e.type === "token" && n === TOKENS },
      { point: "final checkpoint", via: "api", reached: (e, n) => e.type === "checkpoint" && n === TOKENS },
      { point: "final checkpoint", via: "service", reached: (e, n) => e.type === "checkpoint" && n === TOKENS },
      { point: "terminal event", via: "service", reached: (e) => e.type === "status" && e.status !== "running" },
      { point: "terminal event", via: "api", reached: (e) => e.type === "status" && e.status !== "running" },
    ];
    const cancelVia = async (via: Trigger["via"], runId: string): Promise<any> => {
      if (via === "api") return (await gqlOk(app.url, CANCEL_RUN, { runId })).cancelRun;
      try {
        const run = await app.services.runs.cancelRun({ runId }, LOCAL_PRINCIPAL);
        return { __typename: "CancelRunSuccess", run: { status: run.status.toUpperCase() } };
      } catch (error) {
        if ((error as Error).name !== "RunNotActiveError") throw error;
        return { __typename: "RunNotActiveError", code: "RUN_NOT_ACTIVE", runId };
      }
    };
    const client = wsClient(app.url);
    const outcomes = new Map<string, number>();
    try {
      for (let i = 0; i < 30; i++) {
        const { point, via, reached } = triggers[i % triggers.length]!;
        const { runId, conversationId } = await startRun(app.url, `race ${i}`);
        let cancelled: Promise<any> | undefined;
        let tokens = 0;
        for await (const event of (await app.services.bus.subscribeRun(runId))!) {
          if (event.type === "token") tokens += 1;
          if (!cancelled && reached(event, tokens)) cancelled = cancelVia(via, runId);
        }
        const result = await cancelled!;
        const final = await waitForRun(app.url, runId);
        expect(["COMPLETED", "CANCELLED"]).toContain(final.status);
        expect(final.errorCode).toBe(final.status === "CANCELLED" ? "CANCELLED" : null);
        if (result.__typename === "CancelRunSuccess") {
          expect(result.run.status).toBe(final.status);
        } else {
          expect(result).toMatchObject({ __typename: "RunNotActiveError", code: "RUN_NOT_ACTIVE", runId });
          expect(final.status).toBe("COMPLETED");
        }
        // Subscribers see one terminal event, last, and it tells what the database says.
        const events = (await collect(client, RUN_EVENTS, { runId }).done).map((r) => r.runEvents);
        const terminal = events.filter((e) => e.__typename === "RunStatusEvent" && e.status !== "RUNNING");
        expect(terminal).toEqual([expect.objectContaining({ status: final.status })]);
        expect(events.at(-1)).toBe(terminal[0]);
        // The status tells the truth about the thread: COMPLETED has nothing left to run, CANCELLED left its step pending.
        const after = await conversation(conversationId);
        expect(after.activeRun).toBeNull();
        expect(after.next).toEqual(final.status === "COMPLETED" ? [] : ["agent"]);
        const key = `${point} (${via}): ${result.__typename} ${final.status}`;
        outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
      }
    } finally {
      await client.dispose();
    }
    console.info("cancel race outcomes", Object.fromEntries(outcomes));
    // Both endings happened: cancels that stopped the run and cancels that came too late.
    expect([...outcomes.keys()].some((k) => k.endsWith("CANCELLED"))).toBe(true);
    expect([...outcomes.keys()].some((k) => k.endsWith("COMPLETED"))).toBe(true);
  }, 120_000);
});

describe("cancelRun refusals change nothing", () => {
  it("RunNotActiveError for a finished run, NotFoundError for an unknown id, ValidationError for a malformed id", async () => {
    const { runId } = await startRun(app.url, "finish first");
    const finished = await waitForRun(app.url, runId);
    expect(finished.status).toBe("COMPLETED");

    expect(await cancel(runId)).toMatchObject({ __typename: "RunNotActiveError", code: "RUN_NOT_ACTIVE", runId });
    expect((await gqlOk(app.url, RUN, { id: runId })).run).toEqual(finished);

    const unknown = "00000000-0000-4000-8000-000000000000";
    expect(await cancel(unknown)).toMatchObject({ __typename: "NotFoundError", code: "NOT_FOUND", entity: "Run", entityId: unknown });

    for (const bad of ["not-a-uuid", "", "'; DROP TABLE runs; --"]) {
      const result = await gql(app.url, CANCEL_RUN, { runId: bad });
      expect(result.errors).toBeUndefined();
      expect(result.data.cancelRun).toMatchObject({ __typename: "ValidationError", code: "VALIDATION", field: "runId" });
    }
    expect((await gqlOk(app.url, RUN, { id: runId })).run).toEqual(finished);
  });
});
