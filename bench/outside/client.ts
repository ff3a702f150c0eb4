// The client process: a separate Node process that talks to each system the
// way an application would and times every token on arrival against the stamp
// the fake model (testkit/fake-ollama.ts) put in it, both read on the
// machine's shared clock (testkit/clock.ts).
//   floor      the fake model's stream read directly by ChatOllama, here
//   runledger  startRun over GraphQL-over-HTTP, then runEvents over graphql-ws
//   peer       LangGraph's server through its SDK: runs.stream with
//              streamMode "messages-tuple", one SSE response per run
// The runner (scenario.ts) drives it over IPC, one request at a time.
import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";
import { ChatOllama } from "@langchain/ollama";
import { HumanMessage } from "@langchain/core/messages";
import { createClient, type Client as WsClient } from "graphql-ws";
import WebSocket from "ws";
import { nowMs, readStamps, type TokenStamp } from "../../testkit/clock.ts";
import { clockSkew, planMessage, type StreamPlan } from "../../testkit/fake-ollama.ts";

export type System = "floor" | "runledger" | "peer";

export interface RunResult {
  /** Request sent: startRun, runs.stream or ChatOllama.stream called (ms on the shared clock). */
  requestAt: number;
  /** First token received (ms on the shared clock). */
  firstAt: number | null;
  /** The first token's stamp (its requestAt is when the model got the request). */
  firstStamp: TokenStamp | null;
  /** Receive minus model send, per token, in arrival order (ms). */
  latencies: number[];
  /** Each of those tokens' index in its stream. */
  indexes: number[];
  /** Distinct token indexes received. */
  received: number;
  expected: number;
  error?: string;
}

export interface BatchResult {
  runs: RunResult[];
  /** The batch's first request sent, the last run's first token, the last run done (ms on the shared clock, CLOCK_MONOTONIC: a CPU profile's timestamps are on it too). */
  startMono: number;
  firstTokensMono: number;
  endMono: number;
}

export type Request =
  | { op: "init"; modelUrl: string; runledgerUrl: string; peerUrl: string; peerSdk: string }
  /** Runs at once, each from its own client (a user of its own). */
  | { op: "batch"; system: System; runs: number; plan: StreamPlan }
  /** One run from the client kept for sequential runs (one user, connection already open). */
  | { op: "one"; system: System; plan: StreamPlan };

export type Response = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: string };

// The SDK lives in the peer's own install; only what is used here is typed.
interface PeerClient {
  runs: {
    stream(
      threadId: string | null,
      assistantId: string,
      payload: { input: unknown; streamMode: string; ifNotExists: "create" | "reject" },
    ): AsyncGenerator<{ event: string; data: unknown }>;
  };
}
type PeerClientClass = new (config: { apiUrl: string }) => PeerClient;

let modelUrl = "";
let runledgerUrl = "";
let peerUrl = "";
let PeerSdkClient: PeerClientClass;
let sequentialWs: WsClient | null = null;
let sequentialPeer: PeerClient | null = null;

class TokenLog {
  result: RunResult;
  private seen = new Set<number>();
  constructor(requestAt: number, expected: number) {
    this.result = { requestAt, firstAt: null, firstStamp: null, latencies: [], indexes: [], received: 0, expected };
  }
  note(text: string, receivedAt: number) {
    for (const stamp of readStamps(text)) {
      // A relay that re-sends a whole message at the end must not count its tokens twice.
      if (this.seen.has(stamp.index)) continue;
      this.seen.add(stamp.index);
      if (this.result.firstAt === null) {
        this.result.firstAt = receivedAt;
        this.result.firstStamp = stamp;
        onFirstToken();
      }
      this.result.latencies.push(receivedAt - stamp.sentAt);
      this.result.indexes.push(stamp.index);
      this.result.received++;
    }
  }
}

// The batch in progress notes when its last run got its first token (the end of "run start").
let firstTokensPending = 0;
let firstTokensMono = 0;
function onFirstToken() {
  if (--firstTokensPending === 0) firstTokensMono = nowMs();
}

// ---- floor -----------------------------------------------------------------

async function floorRun(plan: StreamPlan): Promise<RunResult> {
  // One ChatOllama per stream, as runledger makes one per run.
  const model = new ChatOllama({ baseUrl: modelUrl, model: "qwen3" });
  const log = new TokenLog(nowMs(), plan.tokens);
  try {
    const stream = await model.stream([new HumanMessage(planMessage(plan))]);
    for await (const chunk of stream) {
      const at = nowMs();
      if (typeof chunk.content === "string" && chunk.content) log.note(chunk.content, at);
    }
  } catch (error) {
    log.result.error = String(error);
  }
  return log.result;
}

// ---- runledger ---------------------------------------------------------------

const START_RUN = /* GraphQL */ `
  mutation Start($message: String!) {
    startRun(input: { message: $message }) {
      __typename
      ... on StartRunSuccess { run { id } }
      ... on Error { code message }
    }
  }
`;

const RUN_EVENTS = /* GraphQL */ `
  subscription RunEvents($runId: ID!) {
    runEvents(runId: $runId) {
      __typename
      ... on TokenEvent { text }
      ... on RunStatusEvent { status errorCode errorMessage }
    }
  }
`;

function wsClient(): Promise<WsClient> {
  const client = createClient({ url: `${runledgerUrl.replace(/^http/, "ws")}/graphql`, webSocketImpl: WebSocket, lazy: false, retryAttempts: 0 });
  return new Promise((resolve, reject) => {
    const offOk = client.on("connected", () => {
      offOk();
      offErr();
      resolve(client);
    });
    const offErr = client.on("error", (error) => {
      offOk();
      offErr();
      reject(error instanceof Error ? error : new Error(String(error)));
    });
  });
}

async function runledgerRun(client: WsClient, plan: StreamPlan): Promise<RunResult> {
  const log = new TokenLog(nowMs(), plan.tokens);
  try {
    const response = await fetch(`${runledgerUrl}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/graphql-response+json" },
      body: JSON.stringify({ query: START_RUN, variables: { message: planMessage(plan) } }),
    });
    const body = (await response.json()) as {
      data?: { startRun: { __typename: string; run?: { id: string }; code?: string; message?: string } };
      errors?: unknown[];
    };
    const started = body.data?.startRun;
    if (!started?.run) throw new Error(`startRun: ${JSON.stringify(body.errors ?? started)}`);
    const runId = started.run.id;
    await new Promise<void>((resolve, reject) => {
      client.subscribe<any>(
        { query: RUN_EVENTS, variables: { runId } },
        {
          next: (result) => {
            const at = nowMs();
            const event = result.data?.runEvents;
            if (event?.__typename === "TokenEvent") log.note(event.text, at);
            else if (event?.__typename === "RunStatusEvent" && event.status !== "RUNNING" && event.status !== "COMPLETED") {
              log.result.error = `run ${event.status}: ${event.errorCode} ${event.errorMessage}`;
            }
            if (result.errors?.length) log.result.error = JSON.stringify(result.errors);
          },
          error: (error) => reject(error instanceof Error ? error : new Error(JSON.stringify(error))),
          complete: () => resolve(),
        },
      );
    });
  } catch (error) {
    log.result.error = String(error);
  }
  return log.result;
}

// ---- the peer ----------------------------------------------------------------

async function peerRun(client: PeerClient, plan: StreamPlan): Promise<RunResult> {
  const log = new TokenLog(nowMs(), plan.tokens);
  try {
    // A new thread per run, created by the run itself: one request, as runledger's startRun creates a conversation.
    const stream = client.runs.stream(randomUUID(), "agent", {
      input: { messages: [{ role: "user", content: planMessage(plan) }] },
      streamMode: "messages-tuple",
      ifNotExists: "create",
    });
    for await (const { event, data } of stream) {
      const at = nowMs();
      if (event === "messages") {
        const [chunk] = data as [{ content?: unknown }];
        if (typeof chunk?.content === "string" && chunk.content) log.note(chunk.content, at);
      } else if (event === "error") log.result.error = JSON.stringify(data);
    }
  } catch (error) {
    log.result.error = String(error);
  }
  return log.result;
}

// ---- requests ----------------------------------------------------------------

async function batch(system: System, runs: number, plan: StreamPlan): Promise<BatchResult> {
  // Every user's connection is open before the clock starts, as chat pages would be.
  const ws = system === "runledger" ? await Promise.all(Array.from({ length: runs }, wsClient)) : [];
  const peers = system === "peer" ? Array.from({ length: runs }, () => new PeerSdkClient({ apiUrl: peerUrl })) : [];
  firstTokensPending = runs;
  firstTokensMono = 0;
  const startMono = nowMs();
  const results = await Promise.all(
    Array.from({ length: runs }, (_, i) =>
      system === "floor" ? floorRun(plan) : system === "runledger" ? runledgerRun(ws[i]!, plan) : peerRun(peers[i]!, plan),
    ),
  );
  const endMono = nowMs();
  await Promise.all(ws.map((c) => c.dispose()));
  return { runs: results, startMono, firstTokensMono: firstTokensMono || endMono, endMono };
}

async function one(system: System, plan: StreamPlan): Promise<RunResult> {
  firstTokensPending = 1;
  if (system === "floor") return floorRun(plan);
  if (system === "runledger") {
    sequentialWs ??= await wsClient();
    return runledgerRun(sequentialWs, plan);
  }
  sequentialPeer ??= new PeerSdkClient({ apiUrl: peerUrl });
  return peerRun(sequentialPeer, plan);
}

async function handle(request: Request): Promise<unknown> {
  switch (request.op) {
    case "init": {
      ({ modelUrl, runledgerUrl, peerUrl } = request);
      PeerSdkClient = ((await import(pathToFileURL(request.peerSdk).href)) as { Client: PeerClientClass }).Client;
      return clockSkew(modelUrl);
    }
    case "batch":
      return batch(request.system, request.runs, request.plan);
    case "one":
      return one(request.system, request.plan);
  }
}

process.on("message", (message: { id: number; request: Request }) => {
  handle(message.request).then(
    (result) => process.send!({ id: message.id, ok: true, result } satisfies Response),
    (error: unknown) => process.send!({ id: message.id, ok: false, error: (error as Error)?.stack ?? String(error) } satisfies Response),
  );
});
process.on("disconnect", () => {
  sequentialWs?.dispose();
  process.exit(0);
});
