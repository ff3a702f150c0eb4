// Every operation limit, over HTTP, SSE and graphql-ws alike (a limit hooked only
// into the HTTP pipeline would let WebSocket operations through), with small
// configured values; the defaults admit the documents runledger itself ships;
// suggestions hidden in production; unexpected errors masked and logged.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { getIntrospectionQuery, parse } from "graphql";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp, tempDatabaseUrl, waitForRun } from "../testkit/app.ts";
import { gqlOk } from "../testkit/graphql.ts";
import { START_RUN } from "../testkit/documents.ts";
import { openRawSocket, operationResult, sseRequest, subscribe } from "../testkit/protocol.ts";
import { ConfigError, loadConfig } from "../src/config.ts";
import { createLogger } from "../src/logger.ts";
import { startApp, type App } from "../src/app.ts";
import { GRAPHIQL_DEFAULT_DOCUMENT } from "../src/server/graphiql.ts";

let fake: FakeOllama;
beforeAll(async () => {
  fake = await startFakeOllama();
});
afterAll(async () => {
  await fake?.close();
});

type Errors = { message: string; extensions?: Record<string, unknown> }[];
interface Request {
  query: string;
  variables?: Record<string, unknown>;
  operationName?: string;
}

/** One operation over each transport, reduced to its errors (undefined when it succeeded). */
const TRANSPORTS: { name: string; run: (app: App, request: Request) => Promise<{ status?: number; errors?: Errors; data?: any }> }[] = [
  {
    name: "HTTP",
    async run(app, request) {
      const response = await fetch(`${app.url}/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/graphql-response+json" },
        body: JSON.stringify(request),
      });
      const body = await response.json();
      return { status: response.status, errors: body.errors, data: body.data };
    },
  },
  {
    name: "SSE",
    async run(app, request) {
      const sse = await sseRequest(app.url, request);
      const next = sse.events.find((e) => e.event === "next")?.data;
      return { status: sse.status, errors: next?.errors, data: next?.data };
    },
  },
  {
    name: "WebSocket",
    async run(app, request) {
      const socket = await openRawSocket(app.url, { init: true });
      try {
        socket.send(subscribe("op", request.query, request.variables, request.operationName));
        const result = await operationResult(socket, "op");
        return { errors: result.error ?? result.next[0]?.errors, data: result.next[0]?.data };
      } finally {
        await socket.close();
      }
    },
  },
];

describe("operation limits, on every transport", () => {
  let app: App;
  beforeAll(async () => {
    app = await startTestApp({
      ollamaUrl: fake.url,
      env: {
        MAX_QUERY_DEPTH: "5",
        MAX_QUERY_ALIASES: "2",
        MAX_QUERY_TOKENS: "60",
        MAX_QUERY_DIRECTIVES: "2",
        MAX_QUERY_COST: "200",
        MAX_QUERY_CHARS: "500",
        MAX_PAGE_SIZE: "5",
      },
    });
  });
  afterAll(async () => {
    await app?.close();
  });

  const CONVERSATION_FIELDS = "edges { node { id title createdAt updatedAt messageCount } }";
  const cases: { name: string; request: Request; limit: string; code?: string; message: RegExp }[] = [
    {
      name: "depth",
      limit: "MAX_QUERY_DEPTH",
      request: { query: "{ conversations { edges { node { runs { edges { node { id } } } } } } }" },
      message: /^Query depth limit of 5 exceeded, found 7\.$/,
    },
    {
      name: "aliases",
      limit: "MAX_QUERY_ALIASES",
      request: { query: "{ a: conversations { totalCount } b: conversations { totalCount } c: conversations { totalCount } }" },
      message: /^Aliases limit of 2 exceeded, found 3\.$/,
    },
    { name: "tokens", limit: "MAX_QUERY_TOKENS", request: { query: `{ ${"a ".repeat(70)}}` }, message: /^Token limit of 60 exceeded\.$/ },
    {
      name: "directives",
      limit: "MAX_QUERY_DIRECTIVES",
      request: { query: "{ a: __typename @skip(if: false) b: __typename @skip(if: false) c: __typename @skip(if: false) }" },
      message: /^Directives limit of 2 exceeded, found 3\.$/,
    },
    {
      name: "cost",
      limit: "MAX_QUERY_COST",
      request: { query: `{ a: conversations(first: 5) { ${CONVERSATION_FIELDS} } b: conversations(first: 5) { ${CONVERSATION_FIELDS} } }` },
      message: /^Query Cost limit of 200 exceeded, found \d+(\.\d+)?\.$/,
    },
    {
      name: "document length",
      limit: "MAX_QUERY_CHARS",
      request: { query: `{ __typename } # ${"x".repeat(600)}` },
      message: /^Document of 617 characters is longer than 500\.$/,
    },
    {
      name: "page size (literal first)",
      limit: "MAX_PAGE_SIZE",
      request: { query: "{ conversations(first: 6) { totalCount } }" },
      message: /^first of conversations must be at most 5, got 6; page with after\/before\.$/,
    },
    {
      name: "page size (last from a variable)",
      limit: "MAX_PAGE_SIZE",
      request: { query: "query($n: Int) { conversations(last: $n) { totalCount } }", variables: { n: 1000 } },
      message: /^last of conversations must be at most 5, got 1000/,
    },
    {
      name: "page size (a variable's default)",
      limit: "MAX_PAGE_SIZE",
      request: { query: "query($n: Int = 7) { conversations(first: $n) { totalCount } }" },
      message: /^first of conversations must be at most 5, got 7/,
    },
    {
      name: "page size (inside a fragment, on a nested connection)",
      limit: "MAX_PAGE_SIZE",
      request: { query: 'query { conversation(id: "x") { ...F } } fragment F on Conversation { runs(first: 6) { totalCount } }' },
      message: /^first of runs must be at most 5, got 6/,
    },
    {
      name: "negative page size",
      limit: "",
      code: "VALIDATION",
      request: { query: "query($n: Int) { conversations(first: $n) { totalCount } }", variables: { n: -1 } },
      message: /^first of conversations must not be negative, got -1\.$/,
    },
  ];

  for (const transport of TRANSPORTS) {
    describe(`over ${transport.name}`, () => {
      for (const c of cases) {
        it(`refuses a document over the ${c.name} limit, naming the limit`, async () => {
          const result = await transport.run(app, c.request);
          if (transport.name === "HTTP") expect(result.status).toBe(400);
          expect(result.data ?? undefined).toBeUndefined();
          expect(result.errors).toHaveLength(1);
          const [error] = result.errors!;
          expect(error!.message).toMatch(c.message);
          if (c.code) expect(error!.extensions).toEqual({ code: c.code });
          else expect(error!.extensions).toEqual({ code: "LIMIT_EXCEEDED", limit: c.limit, max: expect.any(Number) });
        });
      }

      it("serves documents at the limits", async () => {
        const atLimits = await transport.run(app, {
          query:
            "query($n: Int = 5) { a: conversations(first: $n) { edges { node { id } } } b: conversations(last: 5) { totalCount } __typename @skip(if: false) }",
        });
        expect(atLimits.errors).toBeUndefined();
        expect(atLimits.data).toEqual({ a: { edges: [] }, b: { totalCount: 0 }, __typename: "Query" });
      });
    });
  }

  it("over HTTP, a limit answers 200 to an application/json client, like any validation failure", async () => {
    const response = await fetch(`${app.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(cases[0]!.request),
    });
    expect(response.status).toBe(200);
    expect((await response.json()).errors[0].extensions.code).toBe("LIMIT_EXCEEDED");
  });
});

describe("the page-size check's per-document cache", () => {
  it("judges each execution by its own variables: one parsed document, different pages", async () => {
    const { schema } = await import("../src/schema/index.ts");
    const { pageSizeViolation } = await import("../src/server/plugins/page-size.ts");
    const document = parse("query($n: Int) { conversations(first: $n) { totalCount } }");
    const check = (n: unknown) => pageSizeViolation({ schema, document, variableValues: { n } }, 5);
    expect(check(5)).toBeNull();
    expect(check(6)?.message).toBe("first of conversations must be at most 5, got 6; page with after/before.");
    expect(check(-1)?.extensions.code).toBe("VALIDATION");
    expect(check(null)).toBeNull();
    expect(check(5)).toBeNull();
    // A document without connections is found to have nothing to check, and stays so.
    const plain = parse("{ __typename }");
    expect(pageSizeViolation({ schema, document: plain }, 5)).toBeNull();
    expect(pageSizeViolation({ schema, document: plain }, 5)).toBeNull();
  });
});

describe("byte limits and batching", () => {
  let app: App;
  beforeAll(async () => {
    app = await startTestApp({ ollamaUrl: fake.url, env: { MAX_REQUEST_BYTES: "4096", MAX_QUERY_CHARS: "100000", MAX_QUERY_TOKENS: "100000" } });
  });
  afterAll(async () => {
    await app?.close();
  });
  const big = JSON.stringify({ query: `{ __typename } # ${"x".repeat(5000)}` });

  it("HTTP: a body over MAX_REQUEST_BYTES gets 413, with or without a Content-Length", async () => {
    const sized = await fetch(`${app.url}/graphql`, { method: "POST", headers: { "content-type": "application/json" }, body: big });
    expect(sized.status).toBe(413);
    expect((await sized.json()).errors[0].extensions.code).toBe("REQUEST_ENTITY_TOO_LARGE");
    const chunked = await fetch(`${app.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: new Blob([big]).stream(),
      duplex: "half",
    } as RequestInit);
    expect(chunked.status).toBe(413);
  });

  it("SSE: the same body over POST gets 413", async () => {
    const response = await fetch(`${app.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: big,
    });
    expect(response.status).toBe(413);
  });

  it("WebSocket: a message over MAX_REQUEST_BYTES closes the socket with 1009", async () => {
    const socket = await openRawSocket(app.url, { init: true });
    socket.send(big);
    expect((await socket.closed).code).toBe(1009);
  });

  it("a body just under the limit is served on both", async () => {
    const query = `{ __typename } # ${"x".repeat(3000)}`;
    expect((await TRANSPORTS[0]!.run(app, { query })).data).toEqual({ __typename: "Query" });
    expect((await TRANSPORTS[2]!.run(app, { query })).data).toEqual({ __typename: "Query" });
  });

  it("batching is off: an array of operations gets 400", async () => {
    const response = await fetch(`${app.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/graphql-response+json" },
      body: JSON.stringify([{ query: "{ __typename }" }, { query: "{ __typename }" }]),
    });
    expect(response.status).toBe(400);
    expect((await response.json()).errors[0]).toMatchObject({ message: "Batching is not supported.", extensions: { code: "BAD_REQUEST" } });
  });
});

describe("MAX_MESSAGE_CHARS, on both transports", () => {
  let app: App & { databaseFile: string };
  beforeAll(async () => {
    app = await startTestApp({ ollamaUrl: fake.url, env: { MAX_MESSAGE_CHARS: "50" } });
  });
  afterAll(async () => {
    await app?.close();
  });

  for (const transport of [TRANSPORTS[0]!, TRANSPORTS[2]!]) {
    it(`over ${transport.name}: 51 characters are a ValidationError, 50 start a run`, async () => {
      const tooLong = await transport.run(app, { query: START_RUN, variables: { message: "y".repeat(51) } });
      expect(tooLong.data.startRun).toMatchObject({ __typename: "ValidationError", field: "message" });
      const fits = await transport.run(app, { query: START_RUN, variables: { message: "y".repeat(50) } });
      expect(fits.data.startRun.__typename).toBe("StartRunSuccess");
      await waitForRun(app.url, fits.data.startRun.run.id);
    });
  }
});

describe("the defaults admit what runledger ships", () => {
  let app: App;
  beforeAll(async () => {
    app = await startTestApp({ ollamaUrl: fake.url });
  });
  afterAll(async () => {
    await app?.close();
  });

  it("GraphiQL's own introspection query", async () => {
    const result = await TRANSPORTS[0]!.run(app, { query: getIntrospectionQuery({ descriptions: true, inputValueDeprecation: true }) });
    expect(result.errors).toBeUndefined();
    expect(result.data.__schema.queryType.name).toBe("Query");
  });

  it("every operation of the GraphiQL default document", async () => {
    const { startRun } = await gqlOk(app.url, START_RUN, { message: "hello" });
    await waitForRun(app.url, startRun.run.id);
    for (const [operationName, variables] of [
      ["StartRun", {}],
      ["Inspect", { id: startRun.conversation.id }],
    ] as const) {
      const result = await TRANSPORTS[0]!.run(app, { query: GRAPHIQL_DEFAULT_DOCUMENT, operationName, variables });
      expect(result.errors).toBeUndefined();
    }
    const follow = await TRANSPORTS[2]!.run(app, { query: GRAPHIQL_DEFAULT_DOCUMENT, operationName: "FollowRun", variables: { runId: startRun.run.id } });
    expect(follow.errors).toBeUndefined();
  });

  it("a full page of runs with their fields", async () => {
    const query = `query($id: ID!) { conversation(id: $id) { id title messageCount next resumable messages { role content toolCalls { name args } }
      runs(first: 100) { totalCount edges { cursor node { id kind status errorCode errorMessage input startedAt finishedAt } } } } }`;
    const result = await TRANSPORTS[0]!.run(app, { query, variables: { id: "00000000-0000-4000-8000-000000000000" } });
    expect(result.errors).toBeUndefined();
  });

  it("the limits are configurable and validated", () => {
    const config = loadConfig({});
    expect(config.limits).toEqual({
      requestBytes: 1_048_576,
      queryChars: 20_000,
      queryTokens: 1_000,
      queryDepth: 12,
      queryAliases: 30,
      queryDirectives: 50,
      queryCost: 50_000,
      pageSize: 100,
      wsInitTimeoutMs: 10_000,
      hideSuggestions: false,
    });
    expect(() => loadConfig({ MAX_PAGE_SIZE: "101" })).toThrow(ConfigError);
    expect(() => loadConfig({ MAX_QUERY_DEPTH: "deep" })).toThrow(/MAX_QUERY_DEPTH must be a whole number/);
    expect(() => loadConfig({ MAX_REQUEST_BYTES: "10" })).toThrow(/MAX_REQUEST_BYTES must be between/);
    expect(loadConfig({ NODE_ENV: "production" }).limits.hideSuggestions).toBe(true);
  });
});

describe("error messages", () => {
  const UNKNOWN_FIELD: Request = { query: "{ conversationz { id } }" };
  // Variables are coerced at execution, not validation: a second path for suggestions.
  const MISSPELT_INPUT: Request = { query: "mutation($i: StartRunInput!) { startRun(input: $i) { __typename } }", variables: { i: { mesage: "hi" } } };

  describe("in production, field suggestions are hidden", () => {
    let app: App;
    beforeAll(async () => {
      app = await startTestApp({ ollamaUrl: fake.url, env: { NODE_ENV: "production" } });
    });
    afterAll(async () => {
      await app?.close();
    });
    for (const transport of TRANSPORTS) {
      it(`over ${transport.name}`, async () => {
        const result = await transport.run(app, UNKNOWN_FIELD);
        expect(result.errors![0]!.message).toBe('Cannot query field "conversationz" on type "Query".');
        const subscription = await transport.run(app, { query: 'subscription { runEvent(runId: "x") { seq } }' });
        expect(subscription.errors![0]!.message).toBe('Cannot query field "runEvent" on type "Subscription".');
        const input = await transport.run(app, MISSPELT_INPUT);
        expect(input.errors!.map((e) => e.message)).toContainEqual(expect.stringMatching(/Field "mesage" is not defined by type "StartRunInput"\.$/));
      });
    }
  });

  describe("in development they are shown", () => {
    let app: App;
    beforeAll(async () => {
      app = await startTestApp({ ollamaUrl: fake.url });
    });
    afterAll(async () => {
      await app?.close();
    });
    it("over HTTP and WebSocket", async () => {
      for (const transport of [TRANSPORTS[0]!, TRANSPORTS[2]!]) {
        expect((await transport.run(app, UNKNOWN_FIELD)).errors![0]!.message).toMatch(/Did you mean "conversation" or "conversations"\?$/);
        expect((await transport.run(app, MISSPELT_INPUT)).errors!.map((e) => e.message)).toContainEqual(expect.stringMatching(/Did you mean "message"\?$/));
      }
    });
  });

  describe("unexpected errors are masked, and their cause is logged", () => {
    let app: App;
    const log: string[] = [];
    let conversationId = "";
    beforeAll(async () => {
      const config = loadConfig({ PORT: "0", DATABASE_URL: tempDatabaseUrl().url, OLLAMA_HOST: fake.url, LOG_LEVEL: "error" });
      app = await startApp(
        config,
        createLogger(config.logLevel, (line) => log.push(line)),
      );
      const { startRun } = await gqlOk(app.url, START_RUN, { message: "to be corrupted" });
      await waitForRun(app.url, startRun.run.id);
      conversationId = startRun.conversation.id;
      // A checkpoint blob that is not JSON: reading the thread fails inside a resolver.
      const db = new Database(config.databasePath);
      db.prepare("UPDATE checkpoints SET checkpoint = ? WHERE thread_id = ?").run(Buffer.from("{not json"), conversationId);
      db.close();
    });
    afterAll(async () => {
      await app?.close();
    });

    for (const transport of TRANSPORTS) {
      it(`over ${transport.name}`, async () => {
        log.length = 0;
        const result = await transport.run(app, {
          query: "query($id: ID!) { conversation(id: $id) { title messages { content } } }",
          variables: { id: conversationId },
        });
        expect(result.errors).toEqual([expect.objectContaining({ message: "Unexpected error.", extensions: { code: "INTERNAL_SERVER_ERROR" } })]);
        expect(JSON.stringify(result)).not.toMatch(/JSON|position|stack/i);
        const logged = log.map((line) => JSON.parse(line)).find((record) => record.msg === "unexpected error in an operation");
        expect(logged).toMatchObject({
          level: "error",
          error: { name: "SyntaxError", message: expect.stringMatching(/JSON/) },
          path: ["conversation", "messages"],
        });
      });
    }
  });
});
