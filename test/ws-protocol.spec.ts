// The transports' own rules, checked with raw clients: graphql-transport-ws close
// codes for every protocol breach (and errors, not closes, for bad operations),
// and GraphQL over SSE in distinct connections mode.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp, waitForRun } from "../testkit/app.ts";
import { gqlOk } from "../testkit/graphql.ts";
import { START_RUN } from "../testkit/documents.ts";
import { openRawSocket, operationResult, sseRequest, subscribe } from "../testkit/protocol.ts";
import type { App } from "../src/app.ts";

let fake: FakeOllama;
let app: App;
/** A subscription that stays open: the events of a conversation with no active run. */
let LIVE = "";

beforeAll(async () => {
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url, env: { WS_INIT_TIMEOUT_MS: "300", EVENT_GRACE_MS: "0" } });
  const { startRun } = await gqlOk(app.url, START_RUN, { message: "a conversation to follow" });
  await waitForRun(app.url, startRun.run.id);
  LIVE = `subscription { conversationEvents(conversationId: "${startRun.conversation.id}") { seq } }`;
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

const TYPENAME = "{ __typename }";

async function finishedRun(): Promise<string> {
  const { startRun } = await gqlOk(app.url, START_RUN, { message: "hello" });
  await waitForRun(app.url, startRun.run.id);
  return startRun.run.id;
}

describe("graphql-transport-ws: protocol breaches close the socket with the protocol's code", () => {
  const breaches: { name: string; frames: () => (string | Buffer | object)[]; init?: boolean; code: number }[] = [
    { name: "a frame that is not JSON", frames: () => ["hello"], code: 4400 },
    { name: "a JSON frame that is not a message", frames: () => [[1, 2, 3]], code: 4400 },
    { name: "an unknown message type", frames: () => [{ type: "start", id: "1" }], init: true, code: 4400 },
    { name: "a subscribe without an id", frames: () => [{ type: "subscribe", payload: { query: TYPENAME } }], init: true, code: 4400 },
    { name: "a subscribe with an empty id", frames: () => [subscribe("", TYPENAME)], init: true, code: 4400 },
    { name: "a subscribe with a numeric id", frames: () => [{ ...subscribe("x", TYPENAME), id: 7 }], init: true, code: 4400 },
    { name: "a subscribe whose query is not a string", frames: () => [{ id: "1", type: "subscribe", payload: { query: 42 } }], init: true, code: 4400 },
    {
      name: "a subscribe whose variables are not a map",
      frames: () => [{ id: "1", type: "subscribe", payload: { query: TYPENAME, variables: "x" } }],
      init: true,
      code: 4400,
    },
    { name: "a binary frame that is not UTF-8 JSON", frames: () => [Buffer.from([0xff, 0xfe, 0xfd])], init: true, code: 4400 },
    { name: "a subscribe before connection_init", frames: () => [subscribe("1", TYPENAME)], code: 4401 },
    { name: "a second connection_init", frames: () => [{ type: "connection_init" }], init: true, code: 4429 },
    { name: "a second subscribe with an id still in use", frames: () => [subscribe("1", LIVE), subscribe("1", TYPENAME)], init: true, code: 4409 },
  ];

  for (const breach of breaches) {
    it(`${breach.name}: ${breach.code}`, async () => {
      const socket = await openRawSocket(app.url, { init: breach.init });
      for (const frame of breach.frames()) socket.send(frame);
      expect((await socket.closed).code).toBe(breach.code);
    });
  }

  it("no connection_init within WS_INIT_TIMEOUT_MS: 4408", async () => {
    const socket = await openRawSocket(app.url);
    expect(await socket.closed).toEqual({ code: 4408, reason: "Connection initialisation timeout" });
  });

  it("no graphql-transport-ws subprotocol: 4406", async () => {
    const socket = await openRawSocket(app.url, { protocol: null });
    expect((await socket.closed).code).toBe(4406);
  });

  it("a message larger than MAX_REQUEST_BYTES: 1009", async () => {
    const socket = await openRawSocket(app.url, { init: true });
    socket.send(subscribe("1", `{ __typename } # ${"x".repeat(1_100_000)}`));
    expect((await socket.closed).code).toBe(1009);
  });
});

describe("graphql-transport-ws: what is allowed", () => {
  it("ping before connection_init is answered with pong", async () => {
    const socket = await openRawSocket(app.url);
    socket.send({ type: "ping", payload: { n: 1 } });
    expect(await socket.message((m) => m.type === "pong")).toEqual({ type: "pong", payload: { n: 1 } });
    await socket.close();
  });

  it("an id may be reused once its operation has completed, and completing an unknown id is ignored", async () => {
    const socket = await openRawSocket(app.url, { init: true });
    socket.send(subscribe("a", TYPENAME));
    expect(await operationResult(socket, "a")).toEqual({ next: [{ data: { __typename: "Query" } }] });
    socket.messages.length = 0;
    socket.send({ type: "complete", id: "never-used" });
    socket.send(subscribe("a", TYPENAME));
    expect(await operationResult(socket, "a")).toEqual({ next: [{ data: { __typename: "Query" } }] });
    await socket.close();
  });

  it("a bad operation gets an error message for its id; the connection serves the next one", async () => {
    const socket = await openRawSocket(app.url, { init: true });
    socket.send(subscribe("syntax", "{ __typename "));
    socket.send(subscribe("unknown-field", "{ zzz }"));
    socket.send(subscribe("unknown-operation", "query A { __typename }", undefined, "B"));
    expect((await operationResult(socket, "syntax")).error).toEqual([expect.objectContaining({ message: "Syntax Error: Expected Name, found <EOF>." })]);
    expect((await operationResult(socket, "unknown-field")).error).toEqual([
      expect.objectContaining({ message: 'Cannot query field "zzz" on type "Query".', extensions: { code: "GRAPHQL_VALIDATION_FAILED" } }),
    ]);
    expect((await operationResult(socket, "unknown-operation")).error).toEqual([expect.objectContaining({ message: "Unable to identify operation" })]);
    socket.send(subscribe("fine", TYPENAME));
    expect(await operationResult(socket, "fine")).toEqual({ next: [{ data: { __typename: "Query" } }] });
    expect(socket.ws.readyState).toBe(socket.ws.OPEN);
    await socket.close();
  });

  it("a client complete ends a live subscription; the server sends nothing more for it", async () => {
    const socket = await openRawSocket(app.url, { init: true });
    socket.send(subscribe("live", LIVE));
    socket.send({ type: "complete", id: "live" });
    // The same id is free again: the server forgot the first operation.
    socket.send(subscribe("live", TYPENAME));
    expect(await operationResult(socket, "live")).toEqual({ next: [{ data: { __typename: "Query" } }] });
    await socket.close();
  });
});

describe("GraphQL over SSE, distinct connections mode", () => {
  const RUN_EVENTS = "subscription($runId: ID!) { runEvents(runId: $runId) { __typename seq ... on RunStatusEvent { status } } }";

  for (const method of ["POST", "GET"] as const) {
    it(`${method}: a finished run's subscription is one next event, then complete, then the response ends`, async () => {
      const runId = await finishedRun();
      const sse = await sseRequest(app.url, { query: RUN_EVENTS, variables: { runId } }, { method });
      expect(sse.status).toBe(200);
      expect(sse.contentType).toMatch(/^text\/event-stream/);
      expect(sse.events.map((e) => e.event)).toEqual(["next", "complete"]);
      expect(sse.events[0]!.data).toEqual({ data: { runEvents: { __typename: "RunStatusEvent", seq: expect.any(Number), status: "COMPLETED" } } });
    });
  }

  it("a query over SSE is one next event and complete", async () => {
    const sse = await sseRequest(app.url, { query: TYPENAME });
    expect(sse.events).toEqual([
      { event: "next", data: { data: { __typename: "Query" } } },
      { event: "complete", data: null },
    ]);
  });

  it("an invalid operation is one next event carrying the errors, and complete", async () => {
    const sse = await sseRequest(app.url, { query: 'subscription { conversationEvents(conversationId: "x") { nope } }' });
    expect(sse.events.map((e) => e.event)).toEqual(["next", "complete"]);
    expect(sse.events[0]!.data.errors[0].extensions.code).toBe("GRAPHQL_VALIDATION_FAILED");
  });

  it("a mutation over GET is refused with 405", async () => {
    const sse = await sseRequest(app.url, { query: 'mutation { startRun(input: { message: "x" }) { __typename } }' }, { method: "GET" });
    expect(sse.status).toBe(405);
  });
});
