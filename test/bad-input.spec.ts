// The bad-input corpus: inputs nobody intended, over HTTP, SSE and graphql-ws.
// Each case asserts the exact class of answer (status and error code, typed
// refusal, or close code), that the database is unchanged when nothing should be
// written, and that the server still serves a normal run afterwards.
import net from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { defaultResponder, startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp } from "../testkit/app.ts";
import { snapshotDatabase } from "../testkit/db-snapshot.ts";
import { START_RUN } from "../testkit/documents.ts";
import { openRawSocket, operationResult, sseRequest, subscribe, type RawSocket } from "../testkit/protocol.ts";
import type { App } from "../src/app.ts";

const TOKEN = "corpus-token-0123456789";
const AUTH = { authorization: `Bearer ${TOKEN}` };
const UNKNOWN = "00000000-0000-4000-8000-000000000000";

let fake: FakeOllama;
let app: App & { databaseFile: string };
let conversationId = "";
let finishedRunId = "";

// ---- clients ---------------------------------------------------------------

interface HttpAnswer {
  status: number;
  body: any;
}

async function http(
  body: string | Buffer | undefined,
  options: { headers?: Record<string, string>; method?: string; path?: string; auth?: boolean } = {},
): Promise<HttpAnswer> {
  const response = await fetch(`${app.url}${options.path ?? "/graphql"}`, {
    method: options.method ?? "POST",
    headers: {
      ...(options.auth === false ? {} : AUTH),
      accept: "application/graphql-response+json",
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
      ...options.headers,
    },
    body: body as BodyInit | undefined,
  });
  const text = await response.text();
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, body: parsed };
}

const gqlBody = (query: string, variables?: unknown, extra: Record<string, unknown> = {}) => JSON.stringify({ query, variables, ...extra });
const post = (query: string, variables?: unknown) => http(gqlBody(query, variables));

async function ws(
  frames: (socket: RawSocket) => (string | Buffer | object)[],
  options: { init?: Record<string, unknown> | boolean; auth?: boolean } = {},
): Promise<RawSocket> {
  const init = options.init === undefined ? (options.auth === false ? true : AUTH) : options.init;
  const socket = await openRawSocket(app.url, { init: init === false ? undefined : init });
  for (const frame of frames(socket)) socket.send(frame);
  return socket;
}

async function wsOperation(query: string, variables?: Record<string, unknown>, operationName?: string) {
  const socket = await ws(() => [subscribe("op", query, variables, operationName)]);
  try {
    return await operationResult(socket, "op");
  } finally {
    await socket.close();
  }
}

const sse = (query: string, variables?: Record<string, unknown>, method: "GET" | "POST" = "POST") =>
  sseRequest(app.url, { query, variables }, { method, headers: AUTH });

// ---- expectations ----------------------------------------------------------

/** Bytes written to the server as they are, not through an HTTP client: the server's first reply line and all that follows. */
function rawHttp(request: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const socket = net.connect(Number(new URL(app.url).port), "127.0.0.1", () => socket.write(request));
    let text = "";
    socket.on("data", (d) => (text += d));
    socket.on("end", () => resolve(text));
    socket.on("error", reject);
  });
}

function httpError(answer: HttpAnswer, status: number, code: string | undefined, message?: RegExp) {
  expect(answer.status).toBe(status);
  expect(answer.body.data ?? undefined).toBeUndefined();
  expect(answer.body.errors?.[0]?.extensions?.code).toBe(code);
  if (message) expect(answer.body.errors[0].message).toMatch(message);
}

function typedRefusal(answer: HttpAnswer, field: string, typename: string, code: string) {
  expect(answer.status).toBe(200);
  expect(answer.body.errors).toBeUndefined();
  expect(answer.body.data[field]).toMatchObject({ __typename: typename, code });
}

const START = START_RUN;
const MUTATE_START = (message: unknown, conversationIdArg?: unknown) => post(START, { message, conversationId: conversationIdArg });

/** editState on the first checkpoint of the conversation the corpus set up (or on `checkpointId`). */
async function EDIT(values: unknown, asNode: string | null = null, checkpointId?: string, idempotencyKey?: string): Promise<HttpAnswer> {
  const at =
    checkpointId ??
    (await post("query($id: ID!) { conversation(id: $id) { checkpoints(first: 1) { edges { node { id } } } } }", { id: conversationId })).body.data.conversation
      .checkpoints.edges[0].node.id;
  return post("mutation($i: EditStateInput!) { editState(input: $i) { __typename ... on Error { code } } }", {
    i: { checkpointId: at, values, asNode, idempotencyKey },
  });
}

// ---- the corpus ------------------------------------------------------------

interface Case {
  name: string;
  /** Sends the bad input and asserts the answer. */
  run: () => Promise<void>;
  /** True when the input is allowed to change the database. */
  writes?: boolean;
}

const deepQuery = (levels: number) => `{ ${"conversations { edges { node { ".repeat(levels)}id${" } } }".repeat(levels)} }`;
const aliasBomb = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: conversations { totalCount }`).join(" ")} }`;
const fragmentBomb = `query { ...F0 } ${Array.from({ length: 12 }, (_, i) => `fragment F${i} on Query { a${i}: conversations { totalCount } ${i < 11 ? `...F${i + 1}` : ""} }`).join(" ")}`;
const introspectionFlood = `{ ${Array.from({ length: 40 }, (_, i) => `i${i}: __schema { types { name fields { name } } }`).join(" ")} }`;
const recursiveIntrospection = "{ __schema { types { fields { type { fields { type { fields { type { fields { name } } } } } } } } } }";

const HTTP_CASES: Case[] = [
  // Malformed bodies and wrong content types.
  { name: "truncated JSON", run: async () => httpError(await http('{"query": "{ __typename }"'), 400, "BAD_REQUEST", /invalid JSON/) },
  { name: "an empty body", run: async () => httpError(await http(""), 400, "BAD_REQUEST") },
  { name: "a JSON string body", run: async () => httpError(await http('"{ __typename }"'), 400, "BAD_REQUEST", /expected to be object/) },
  { name: "a JSON null body", run: async () => httpError(await http("null"), 400, "BAD_REQUEST") },
  {
    name: "a batch (array) of operations",
    run: async () => httpError(await http(`[${gqlBody("{ __typename }")}]`), 400, "BAD_REQUEST", /Batching is not supported/),
  },
  { name: "a body without a query", run: async () => httpError(await http("{}"), 400, "BAD_REQUEST", /Must provide query string/) },
  { name: "a numeric query", run: async () => httpError(await http('{"query": 5}'), 400, "BAD_REQUEST") },
  { name: "variables as a string", run: async () => httpError(await http('{"query": "{ __typename }", "variables": "{}"}'), 400, "BAD_REQUEST") },
  { name: "variables as an array", run: async () => httpError(await http('{"query": "{ __typename }", "variables": [1]}'), 400, "BAD_REQUEST") },
  { name: "extensions as a string", run: async () => httpError(await http('{"query": "{ __typename }", "extensions": "x"}'), 400, "BAD_REQUEST") },
  {
    name: "an unknown body parameter",
    run: async () => httpError(await http('{"query": "{ __typename }", "mutation": true}'), 400, "BAD_REQUEST", /Unexpected parameter/),
  },
  {
    name: "text/plain",
    run: async () => httpError(await http(gqlBody("{ __typename }"), { headers: { "content-type": "text/plain" } }), 415, "UNSUPPORTED_MEDIA_TYPE"),
  },
  {
    name: "a urlencoded form",
    run: async () =>
      httpError(await http("query=%7B__typename%7D", { headers: { "content-type": "application/x-www-form-urlencoded" } }), 415, "UNSUPPORTED_MEDIA_TYPE"),
  },
  {
    name: "a multipart form",
    run: async () =>
      httpError(await http("--x\r\n\r\n--x--", { headers: { "content-type": "multipart/form-data; boundary=x" } }), 415, "UNSUPPORTED_MEDIA_TYPE"),
  },
  {
    name: "application/xml",
    run: async () => httpError(await http("<query/>", { headers: { "content-type": "application/xml" } }), 415, "UNSUPPORTED_MEDIA_TYPE"),
  },
  {
    name: "a JSON body declared as Latin-1",
    run: async () =>
      httpError(await http(gqlBody("{ __typename }"), { headers: { "content-type": "application/json; charset=iso-8859-1" } }), 415, "UNSUPPORTED_MEDIA_TYPE"),
  },
  {
    name: "a body that is not UTF-8",
    run: async () => {
      const body = Buffer.concat([
        Buffer.from(gqlBody(START, { message: "" }).replace('"message":""', '"message":"')),
        Buffer.from([0xff, 0xfe, 0xc3]),
        Buffer.from('"}}'),
      ]);
      httpError(await http(body), 400, "BAD_REQUEST", /not valid UTF-8/);
    },
  },
  {
    name: "a body over MAX_REQUEST_BYTES",
    run: async () => httpError(await http(gqlBody(`{ __typename } # ${"x".repeat(1_100_000)}`)), 413, "REQUEST_ENTITY_TOO_LARGE"),
  },
  { name: "a PUT", run: async () => expect((await http(gqlBody("{ __typename }"), { method: "PUT" })).status).toBe(405) },
  {
    name: "a mutation over GET",
    run: async () =>
      httpError(
        await http(undefined, {
          method: "GET",
          path: `/graphql?query=${encodeURIComponent('mutation { startRun(input: { message: "get" }) { __typename } }')}`,
        }),
        405,
        "BAD_REQUEST",
      ),
  },
  { name: "an unknown path", run: async () => expect((await http(gqlBody("{ __typename }"), { path: "/graphql/../admin" })).status).toBe(404) },
  { name: "a request that is not HTTP at all", run: async () => expect(await rawHttp("HELLO THERE\r\n\r\n")).toMatch(/^HTTP\/1\.1 400 Bad Request/) },
  // Node's parser refuses these before runledger reads anything; the body plugin relies on it.
  ...["abc", "-1", "5, 5"].map((length) => ({
    name: `a Content-Length of ${JSON.stringify(length)}`,
    run: async () =>
      expect(
        await rawHttp(`POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n{}`),
      ).toMatch(/^HTTP\/1\.1 400 Bad Request/),
  })),
  // Auth.
  { name: "no bearer token", run: async () => expect((await http(gqlBody("{ __typename }"), { auth: false })).status).toBe(401) },
  {
    name: "a wrong bearer token on a mutation",
    run: async () =>
      expect((await http(gqlBody(START, { message: "hi" }), { auth: false, headers: { authorization: "Bearer wrong-token-1234" } })).status).toBe(401),
  },
  // Documents.
  { name: "a syntax error", run: async () => httpError(await post("{ __typename "), 400, "GRAPHQL_PARSE_FAILED") },
  { name: "an unknown field", run: async () => httpError(await post("{ secrets }"), 400, "GRAPHQL_VALIDATION_FAILED") },
  {
    name: "an unknown operation name",
    run: async () => httpError(await http(gqlBody("query A { __typename }", undefined, { operationName: "B" })), 400, "OPERATION_RESOLUTION_FAILURE"),
  },
  { name: "two anonymous operations", run: async () => httpError(await post("{ __typename } { __typename }"), 400, "OPERATION_RESOLUTION_FAILURE") },
  { name: "a deep query", run: async () => httpError(await post(deepQuery(5)), 400, "LIMIT_EXCEEDED", /depth/) },
  { name: "a wide query (alias bomb)", run: async () => httpError(await post(aliasBomb(40)), 400, "LIMIT_EXCEEDED", /Aliases/) },
  { name: "a fragment chain of aliases", run: async () => httpError(await post(fragmentBomb), 400, "LIMIT_EXCEEDED") },
  {
    name: "a fragment cycle",
    run: async () =>
      httpError(
        await post("query { ...A } fragment A on Query { ...B } fragment B on Query { ...A }"),
        400,
        "GRAPHQL_VALIDATION_FAILED",
        /Cannot spread fragment/,
      ),
  },
  { name: "an introspection flood", run: async () => httpError(await post(introspectionFlood), 400, "LIMIT_EXCEEDED", /Aliases/) },
  { name: "recursive introspection", run: async () => httpError(await post(recursiveIntrospection), 400, "GRAPHQL_VALIDATION_FAILED", /introspection/i) },
  { name: "a token flood", run: async () => httpError(await post(`{ ${"__typename ".repeat(1500)}}`), 400, "LIMIT_EXCEEDED", /Token limit/) },
  {
    name: "a directive flood",
    run: async () =>
      httpError(
        await post(`{ ${Array.from({ length: 60 }, (_, i) => `t${i}: __typename @include(if: true)`).join(" ")} }`),
        400,
        "LIMIT_EXCEEDED",
        /Directives/,
      ),
  },
  { name: "a page of 101", run: async () => httpError(await post("{ conversations(first: 101) { totalCount } }"), 400, "LIMIT_EXCEEDED", /at most 100/) },
  {
    name: "a page of a billion from a variable",
    run: async () => httpError(await post("query($n: Int) { conversations(last: $n) { totalCount } }", { n: 1_000_000_000 }), 400, "LIMIT_EXCEEDED"),
  },
  {
    name: "a page size beyond Int",
    run: async () => httpError(await post("query($n: Int) { conversations(first: $n) { totalCount } }", { n: 2 ** 40 }), 400, "LIMIT_EXCEEDED"),
  },
  {
    name: "a garbage cursor",
    run: async () => expect((await post('{ conversations(after: "garbage") { totalCount } }')).body.errors[0].message).toMatch(/Invalid cursor/),
  },
  // Variables.
  { name: "a message of the wrong type", run: async () => httpError(await MUTATE_START(42), 400, undefined, /String cannot represent/) },
  { name: "a missing required variable", run: async () => httpError(await post(START, {}), 400, undefined, /was not provided/) },
  { name: "a null message", run: async () => httpError(await MUTATE_START(null), 400, undefined, /must not be null/) },
  { name: "a message that is an object", run: async () => httpError(await MUTATE_START({ text: "hi" }), 400, undefined, /String cannot represent/) },
  { name: "a conversation id that is an object", run: async () => httpError(await MUTATE_START("hi", { id: 1 }), 400, undefined, /ID cannot represent/) },
  { name: "a float id literal", run: async () => httpError(await post("{ run(id: 1.5) { id } }"), 400, "GRAPHQL_VALIDATION_FAILED") },
  {
    name: "a misspelt input field",
    run: async () => httpError(await post("mutation($i: StartRunInput!) { startRun(input: $i) { __typename } }", { i: { mesage: "hi" } }), 400, undefined),
  },
  // Messages.
  { name: "a blank message", run: async () => typedRefusal(await MUTATE_START(" \n\t "), "startRun", "ValidationError", "VALIDATION") },
  { name: "an empty message", run: async () => typedRefusal(await MUTATE_START(""), "startRun", "ValidationError", "VALIDATION") },
  {
    name: "a message over MAX_MESSAGE_CHARS",
    run: async () => typedRefusal(await MUTATE_START("z".repeat(33_000)), "startRun", "ValidationError", "VALIDATION"),
  },
  { name: "a message with a NUL", run: async () => typedRefusal(await MUTATE_START("a\u0000b"), "startRun", "ValidationError", "VALIDATION") },
  { name: "a message with a lone surrogate", run: async () => httpError(await MUTATE_START("broken \ud800 text"), 400, "BAD_USER_INPUT", /not valid Unicode/) },
  {
    name: "a title with a lone surrogate",
    run: async () =>
      httpError(
        await post("mutation($t: String!, $id: ID!) { renameConversation(input: { conversationId: $id, title: $t }) { __typename } }", {
          t: "\udfff",
          id: conversationId,
        }),
        400,
        "BAD_USER_INPUT",
      ),
  },
  // State edits: nothing unknown reaches LangGraph, and a refusal records no EDIT run.
  ...(
    [
      ["state edit values that are a string", () => EDIT("not an object"), "ValidationError"],
      ["state edit values that are a list", () => EDIT([{ role: "USER", content: "hi" }]), "ValidationError"],
      ["state edit values naming __proto__", () => EDIT(JSON.parse('{"__proto__": {"messages": []}}')), "ValidationError"],
      ["state edit values of a channel the graph lacks", () => EDIT({ secrets: "x" }), "ValidationError"],
      ["state edit messages that are numbers", () => EDIT({ messages: [1, 2] }), "ValidationError"],
      ["state edit messages of an unknown role", () => EDIT({ messages: [{ role: "ROOT", content: "x" }] }), "ValidationError"],
      ["a state edit as __end__", () => EDIT({ messages: [] }, "__end__"), "ValidationError"],
      ["a state edit as a blank node", () => EDIT({ messages: [] }, "  "), "ValidationError"],
      ["a state edit of a malformed checkpoint id", () => EDIT({ messages: [] }, null, "1; DROP TABLE runs"), "ValidationError"],
      ["a state edit of an unknown checkpoint", () => EDIT({ messages: [] }, null, UNKNOWN), "NotFoundError"],
      ["a state edit with a control character in its key", () => EDIT({ messages: [] }, null, undefined, "key\u0007"), "ValidationError"],
    ] as const
  ).map(([name, send, typename]) => ({
    name,
    run: async () => typedRefusal(await send(), "editState", typename, typename === "NotFoundError" ? "NOT_FOUND" : "VALIDATION"),
  })),
  { name: "state edit values that are null", run: async () => httpError(await EDIT(null), 400, undefined, /not to be null/) },
  // Ids.
  { name: "a malformed conversation id", run: async () => typedRefusal(await MUTATE_START("hi", "not-a-uuid"), "startRun", "ValidationError", "VALIDATION") },
  { name: "an unknown conversation id", run: async () => typedRefusal(await MUTATE_START("hi", UNKNOWN), "startRun", "NotFoundError", "NOT_FOUND") },
  {
    name: "an SQL-looking conversation id",
    run: async () => typedRefusal(await MUTATE_START("hi", "x' OR '1'='1"), "startRun", "ValidationError", "VALIDATION"),
  },
  {
    name: "cancelling a malformed run id",
    run: async () =>
      typedRefusal(
        await post('mutation { cancelRun(input: { runId: "nope" }) { __typename ... on Error { code } } }'),
        "cancelRun",
        "ValidationError",
        "VALIDATION",
      ),
  },
  {
    name: "cancelling a finished run",
    run: async () =>
      typedRefusal(
        await post(`mutation { cancelRun(input: { runId: "${finishedRunId}" }) { __typename ... on Error { code } } }`),
        "cancelRun",
        "RunNotActiveError",
        "RUN_NOT_ACTIVE",
      ),
  },
  {
    name: "resuming an unknown conversation",
    run: async () =>
      typedRefusal(
        await post(`mutation { resumeRun(input: { conversationId: "${UNKNOWN}" }) { __typename ... on Error { code } } }`),
        "resumeRun",
        "NotFoundError",
        "NOT_FOUND",
      ),
  },
  {
    name: "resuming with nothing pending",
    run: async () =>
      typedRefusal(
        await post(`mutation { resumeRun(input: { conversationId: "${conversationId}" }) { __typename ... on Error { code } } }`),
        "resumeRun",
        "NothingToResumeError",
        "NOTHING_TO_RESUME",
      ),
  },
  {
    name: "renaming to a blank title",
    run: async () =>
      typedRefusal(
        await post(`mutation { renameConversation(input: { conversationId: "${conversationId}", title: "  " }) { __typename ... on Error { code } } }`),
        "renameConversation",
        "ValidationError",
        "VALIDATION",
      ),
  },
  {
    name: "deleting an unknown conversation",
    run: async () =>
      typedRefusal(
        await post(`mutation { deleteConversation(input: { conversationId: "${UNKNOWN}" }) { __typename ... on Error { code } } }`),
        "deleteConversation",
        "NotFoundError",
        "NOT_FOUND",
      ),
  },
  {
    name: "reading unknown and malformed ids",
    run: async () => {
      const answer = await post(
        `{ a: run(id: "${UNKNOWN}") { id } b: run(id: "nope") { id } c: conversation(id: "") { id } d: node(id: "${UNKNOWN}") { id } e: node(id: "") { id } }`,
      );
      expect(answer).toEqual({ status: 200, body: { data: { a: null, b: null, c: null, d: null, e: null } } });
    },
  },
  {
    name: "an export of a malformed id",
    run: async () => expect((await http(undefined, { method: "GET", path: "/api/conversations/..%2F..%2Fetc/export" })).status).toBeGreaterThanOrEqual(400),
  },
];

const SSE_CASES: Case[] = [
  {
    name: "SSE: a subscription to a malformed run id",
    run: async () => {
      const answer = await sse('subscription { runEvents(runId: "nope") { seq } }');
      expect(answer.events.map((e) => e.event)).toEqual(["next", "complete"]);
      expect(answer.events[0]!.data.errors[0].extensions.code).toBe("VALIDATION");
    },
  },
  {
    name: "SSE: a subscription to an unknown run",
    run: async () => {
      const answer = await sse(`subscription { runEvents(runId: "${UNKNOWN}") { seq } }`);
      expect(answer.events[0]!.data.errors[0].extensions.code).toBe("NOT_FOUND");
    },
  },
  {
    name: "SSE: a subscription with a variable of the wrong type",
    run: async () => {
      const answer = await sse("subscription($r: ID!) { runEvents(runId: $r) { seq } }", { r: [1] });
      expect(answer.status).toBe(400);
      expect(answer.events[0]!.data.errors[0].message).toMatch(/ID cannot represent/);
    },
  },
  {
    name: "SSE: a deep subscription",
    run: async () =>
      expect(
        (await sse(`subscription { conversationEvents(conversationId: "${UNKNOWN}") { ${"... on RunEvent { ".repeat(13)}seq${" }".repeat(13)} } }`)).events[0]!
          .data.errors[0].extensions.code,
      ).toBe("LIMIT_EXCEEDED"),
  },
  {
    name: "SSE: a syntax error over GET",
    run: async () => expect((await sse("subscription {", undefined, "GET")).events[0]!.data.errors[0].extensions.code).toBe("GRAPHQL_PARSE_FAILED"),
  },
  { name: "SSE: no token", run: async () => expect((await sseRequest(app.url, { query: "{ __typename }" })).status).toBe(401) },
  { name: "SSE: a body over MAX_REQUEST_BYTES", run: async () => expect((await sse(`{ __typename } # ${"x".repeat(1_100_000)}`)).status).toBe(413) },
];

const WS_CASES: Case[] = [
  {
    name: "WS: a frame before connection_init",
    run: async () => expect((await (await ws(() => [subscribe("1", "{ __typename }")], { init: false })).closed).code).toBe(4401),
  },
  {
    name: "WS: connection_init without the token",
    run: async () => expect((await (await ws(() => [{ type: "connection_init" }], { init: false })).closed).code).toBe(4401),
  },
  {
    name: "WS: a second connection_init",
    run: async () => expect((await (await ws(() => [{ type: "connection_init", payload: AUTH }])).closed).code).toBe(4429),
  },
  { name: "WS: a frame that is not JSON", run: async () => expect((await (await ws(() => ["{{{"])).closed).code).toBe(4400) },
  { name: "WS: a non-UTF-8 binary frame", run: async () => expect((await (await ws(() => [Buffer.from([0xc3, 0x28, 0xff])])).closed).code).toBe(4400) },
  {
    name: "WS: an invalid subscription id",
    run: async () => expect((await (await ws(() => [{ ...subscribe("x", "{ __typename }"), id: { nested: true } }])).closed).code).toBe(4400),
  },
  {
    name: "WS: a duplicate subscription id",
    run: async () =>
      expect(
        (
          await (
            await ws(() => [
              subscribe("d", `subscription { conversationEvents(conversationId: "${conversationId}") { seq } }`),
              subscribe("d", "{ __typename }"),
            ])
          ).closed
        ).code,
      ).toBe(4409),
  },
  {
    name: "WS: a message over MAX_REQUEST_BYTES",
    run: async () => expect((await (await ws(() => [subscribe("big", `{ __typename } # ${"x".repeat(1_100_000)}`)])).closed).code).toBe(1009),
  },
  { name: "WS: a syntax error", run: async () => expect((await wsOperation("subscription {")).error![0].message).toMatch(/^Syntax Error/) },
  {
    name: "WS: an unknown operation name",
    run: async () => expect((await wsOperation("query A { __typename }", undefined, "C")).error![0].message).toBe("Unable to identify operation"),
  },
  { name: "WS: an alias bomb", run: async () => expect((await wsOperation(aliasBomb(100))).error![0].extensions.code).toBe("LIMIT_EXCEEDED") },
  { name: "WS: an introspection flood", run: async () => expect((await wsOperation(introspectionFlood)).error![0].extensions.code).toBe("LIMIT_EXCEEDED") },
  {
    name: "WS: a page of 500",
    run: async () => expect((await wsOperation("{ conversations(first: 500) { totalCount } }")).next[0].errors[0].extensions.code).toBe("LIMIT_EXCEEDED"),
  },
  {
    name: "WS: a blank message",
    run: async () => expect((await wsOperation(START, { message: "   " })).next[0].data.startRun.__typename).toBe("ValidationError"),
  },
  {
    name: "WS: a message over MAX_MESSAGE_CHARS",
    run: async () => expect((await wsOperation(START, { message: "w".repeat(32_001) })).next[0].data.startRun.__typename).toBe("ValidationError"),
  },
  {
    name: "WS: a message with a lone surrogate",
    run: async () => expect((await wsOperation(START, { message: "\udc00" })).next[0].errors[0].extensions.code).toBe("BAD_USER_INPUT"),
  },
  {
    name: "WS: a subscription to a malformed run id",
    run: async () => expect((await wsOperation('subscription { runEvents(runId: "🙂") { seq } }')).next[0].errors[0].extensions.code).toBe("VALIDATION"),
  },
  {
    name: "WS: a subscription with a negative replay position",
    run: async () => expect((await wsOperation(`subscription { runEvents(runId: "${finishedRunId}", after: -5) { seq } }`)).error ?? []).toEqual([]),
  },
];

// ---- the harness -----------------------------------------------------------

async function normalRun(): Promise<void> {
  const started = await post(START, { message: "still alive?" });
  expect(started.body.data.startRun.__typename).toBe("StartRunSuccess");
  const runId = started.body.data.startRun.run.id;
  for (let i = 0; ; i++) {
    const { body } = await post("query($id: ID!) { run(id: $id) { status } }", { id: runId });
    if (body.data.run.status !== "RUNNING") {
      expect(body.data.run.status).toBe("COMPLETED");
      // Keeps the database small, so each snapshot stays cheap.
      const id = started.body.data.startRun.conversation.id;
      const deleted = await post("mutation($id: ID!) { deleteConversation(input: { conversationId: $id }) { __typename } }", { id });
      expect(deleted.body.data.deleteConversation.__typename).toBe("DeleteConversationSuccess");
      return;
    }
    if (i > 400) throw new Error("the normal run did not finish");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

beforeAll(async () => {
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url, env: { API_TOKEN: TOKEN, EVENT_GRACE_MS: "0" } });
  const started = await post(START, { message: "the corpus's conversation" });
  conversationId = started.body.data.startRun.conversation.id;
  finishedRunId = started.body.data.startRun.run.id;
  for (let i = 0; i < 400 && (await post("query($id: ID!) { run(id: $id) { status } }", { id: finishedRunId })).body.data.run.status === "RUNNING"; i++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});
afterEach(() => {
  fake.setResponder(defaultResponder);
});

describe("the bad-input corpus", () => {
  const corpus = [...HTTP_CASES, ...SSE_CASES, ...WS_CASES];

  it("has at least 60 inputs across HTTP, SSE and WebSocket", () => {
    expect(corpus.length).toBeGreaterThanOrEqual(60);
    expect(new Set(corpus.map((c) => c.name)).size).toBe(corpus.length);
    expect(SSE_CASES.length).toBeGreaterThan(5);
    expect(WS_CASES.length).toBeGreaterThan(10);
  });

  for (const c of corpus) {
    it(c.name, async () => {
      const before = snapshotDatabase(app.databaseFile);
      const modelCalls = fake.requests.length;
      await c.run();
      if (!c.writes) {
        expect(snapshotDatabase(app.databaseFile)).toBe(before);
        expect(fake.requests.length).toBe(modelCalls);
      }
      await normalRun();
    });
  }
});
