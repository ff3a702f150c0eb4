// Trusted operations (TRUSTED_OPERATIONS_FILE): a manifest made by graphql-codegen's
// client preset from the typed client's documents, a real server that takes it, and
// a real urql client sending each operation by its id over HTTP and graphql-ws.
// Admins may still send any document; an id the manifest does not list is refused.
import { execFile, execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { parse, getOperationAST } from "graphql";
import { generate } from "@graphql-codegen/cli";
import { Client, fetchExchange, getOperationName, makeOperation, mapExchange, subscriptionExchange } from "@urql/core";
import { createClient } from "graphql-ws";
import { Environment, fetchQuery, Network, RecordSource, Store, type GraphQLResponse, type GraphQLTaggedNode } from "relay-runtime";
import { ConfigError, loadConfig } from "../src/config.ts";
import { API_TOKEN_PRINCIPAL, LOCAL_PRINCIPAL, type Principal } from "../src/domain/principal.ts";
import { NOBODY } from "../src/server/auth.ts";
import { loadTrustedManifest } from "../src/server/trusted-manifest.ts";
import { mayRunArbitrary, trustedOperationId } from "../src/server/plugins/trusted-operations.ts";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { ROOT, startTestApp, tempDatabaseUrl } from "../testkit/app.ts";
import { createApiKey } from "../src/server/identity/api-keys.ts";
import { gql, sseClient, wsClient } from "../testkit/graphql.ts";
import { START_RUN } from "../testkit/documents.ts";
import { startAndFollow } from "./clients/typed-client.ts";
import { serverCommand } from "../testkit/processes.ts";

const run = promisify(execFile);
const TOKEN = "trusted-operations-admin-token";
const UNLISTED = "0".repeat(64);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-trusted-"));

/** graphql-codegen's client preset with persisted documents, on the typed client's operations: its persisted-documents.json. */
async function clientPresetManifest(): Promise<Record<string, string>> {
  const files = (await generate(
    {
      schema: "schema.graphql",
      documents: ["test/clients/operations.graphql"],
      cwd: ROOT,
      silent: true,
      generates: { "gql/": { preset: "client", presetConfig: { persistedDocuments: true, fragmentMasking: false } } },
    },
    false,
  )) as { filename: string; content: string }[];
  return JSON.parse(files.find((file) => file.filename.endsWith("persisted-documents.json"))!.content);
}

/** relay-compiler with persisted queries (persistConfig.file) on one query: the file it writes, and the query's artifact. */
function relayPersisted(): { manifest: Record<string, string>; query: GraphQLTaggedNode } {
  const project = path.join(dir, "relay");
  fs.mkdirSync(path.join(project, "src", "__generated__"), { recursive: true });
  fs.writeFileSync(path.join(project, "src", "Trusted.js"), "graphql`query TrustedConversationQuery($id: ID!) { conversation(id: $id) { id title } }`;\n");
  // relay-compiler adds to the file, which must exist.
  fs.writeFileSync(path.join(project, "persisted.json"), "{}");
  fs.writeFileSync(
    path.join(project, "relay.config.json"),
    JSON.stringify({
      src: "./src",
      schema: path.join(ROOT, "schema.graphql"),
      language: "javascript",
      artifactDirectory: "./src/__generated__",
      persistConfig: { file: "./persisted.json", algorithm: "SHA256" },
    }),
  );
  execFileSync(process.execPath, [path.join(ROOT, "node_modules/relay-compiler/cli.js")], { cwd: project, stdio: "pipe" });
  const query = createRequire(path.join(project, "src", "index.js"))("./__generated__/TrustedConversationQuery.graphql.js");
  return { manifest: JSON.parse(fs.readFileSync(path.join(project, "persisted.json"), "utf8")), query };
}

function writeFile(name: string, content: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, content);
  return file;
}

/** What a client sent, as the server received it: HTTP request URLs and bodies, graphql-ws subscribe payloads. */
interface Sent {
  http: { url: string; body: string | undefined }[];
  ws: Record<string, unknown>[];
}

/**
 * docs/clients.md's urql client (test/clients/urql.ts) with one exchange more, doing
 * what @urql/exchange-persisted does with the client preset's hashes: each
 * operation goes as its id (`extensions.persistedQuery`), without its document.
 * What it sends is recorded on the way out.
 */
function urqlById(url: string, idOf: (operationName: string) => string, sent: Sent): Client {
  const authorization = `Bearer ${TOKEN}`;
  class RecordingWebSocket extends WebSocket {
    override send(data: any, ...rest: any[]) {
      const message = JSON.parse(String(data));
      if (message.type === "subscribe") sent.ws.push(message.payload);
      return (super.send as (...args: unknown[]) => void)(data, ...rest);
    }
  }
  const ws = createClient({ url: url.replace(/^http/, "ws") + "/graphql", webSocketImpl: RecordingWebSocket, connectionParams: { authorization } });
  const byId = mapExchange({
    onOperation: (operation) =>
      makeOperation(
        operation.kind,
        { ...operation, extensions: { ...operation.extensions, persistedQuery: { version: 1, sha256Hash: idOf(getOperationName(operation.query)!) } } },
        operation.context,
      ),
  });
  return new Client({
    url: `${url}/graphql`,
    fetch: async (input, init) => {
      sent.http.push({ url: String(input), body: init?.body === undefined ? undefined : String(init.body) });
      return fetch(input, init);
    },
    fetchOptions: () => ({ headers: { authorization } }),
    exchanges: [
      byId,
      fetchExchange,
      subscriptionExchange({
        forwardSubscription: (request) => ({
          subscribe: (sink) => ({ unsubscribe: ws.subscribe({ ...request, query: request.query ?? "" }, sink) }),
        }),
      }),
    ],
  });
}

function post(url: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return fetch(`${url}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/graphql-response+json", ...headers },
    body: JSON.stringify(body),
  });
}

const admin = { authorization: `Bearer ${TOKEN}` };

/** Starts a run as the admin, sending the document itself. */
async function startRun(message: string): Promise<{ runId: string; conversationId: string }> {
  const { data } = await gql(app.url, START_RUN, { message }, admin);
  return { runId: data.startRun.run.id, conversationId: data.startRun.conversation.id };
}

/** A user's credential: a real API key of the app's database, made in beforeAll. */
let userKey = "";
function userHeaders(): Record<string, string> {
  return { authorization: `Bearer ${userKey}` };
}

let manifest: Record<string, string>;
let relay: ReturnType<typeof relayPersisted>;
let manifestFile: string;
let fake: FakeOllama;
let app: Awaited<ReturnType<typeof startTestApp>>;

/** The manifest's id for an operation, by its name. */
function idOf(operationName: string): string {
  const found = Object.entries({ ...manifest, ...relay.manifest }).find(([, document]) => getOperationAST(parse(document))?.name?.value === operationName);
  if (!found) throw new Error(`${operationName} is not in the manifest`);
  return found[0];
}

beforeAll(async () => {
  manifest = await clientPresetManifest();
  manifestFile = writeFile("persisted-documents.json", JSON.stringify(manifest));
  relay = relayPersisted();
  // A deployment that serves both kinds of client lists both tools' operations in one file.
  const both = writeFile("both.json", JSON.stringify({ ...manifest, ...relay.manifest }));
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url, env: { API_TOKEN: TOKEN, TRUSTED_OPERATIONS_FILE: both } });
  userKey = (await createApiKey(app.storage.apiKeys, { userId: "ada", role: "user", label: "trusted operations" })).key;
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("who may send any document", () => {
  it("admins may (API_TOKEN, the local developer); users and nobody may not", () => {
    expect(mayRunArbitrary(API_TOKEN_PRINCIPAL)).toBe(true);
    expect(mayRunArbitrary(LOCAL_PRINCIPAL)).toBe(true);
    const user: Principal = { id: "ada", role: "user", source: "api-key", expiresAt: null, claims: {} };
    expect(mayRunArbitrary(user)).toBe(false);
    expect(mayRunArbitrary(NOBODY)).toBe(false);
  });

  it("reads the operation id as Apollo and urql, the GraphQL over HTTP draft, and relay send it", () => {
    expect(trustedOperationId({ extensions: { persistedQuery: { version: 1, sha256Hash: "abc" } } })).toBe("abc");
    expect(trustedOperationId({ documentId: "sha256:abc" })).toBe("sha256:abc");
    expect(trustedOperationId({ doc_id: "42" })).toBe("42");
    expect(trustedOperationId({ query: "{ __typename }" })).toBeNull();
    expect(trustedOperationId({ documentId: 42 })).toBeNull();
  });
});

describe("the manifest", () => {
  it("is what the client preset writes: sha256 of each document → the document", () => {
    expect(Object.keys(manifest)).toHaveLength(3);
    for (const [id, document] of Object.entries(manifest)) expect(id).toBe(`sha256:${crypto.createHash("sha256").update(document).digest("hex")}`);
    expect(loadTrustedManifest(manifestFile)).toEqual(new Map(Object.entries(manifest)));
    expect(loadConfig({ TRUSTED_OPERATIONS_FILE: manifestFile }, () => "").trustedOperationsFile).toBe(manifestFile);
  });

  it.each([
    ["a missing file", () => path.join(dir, "missing.json"), /^TRUSTED_OPERATIONS_FILE .*missing\.json: cannot be read: ENOENT/],
    ["a file that is not JSON", () => writeFile("bad.json", "{ nope"), /: is not JSON: /],
    ["an array", () => writeFile("array.json", '["{ __typename }"]'), /: must be a JSON object of operation id → document$/],
    ["an entry that is not a string", () => writeFile("number.json", '{"a": 1}'), /: the entry "a" must be a document \(a string\), got 1$/],
    ["a document that does not parse", () => writeFile("syntax.json", '{"a": "query {"}'), /: the operation "a" does not parse: Syntax Error: /],
    [
      "a document the schema does not have",
      () => writeFile("invalid.json", '{"a": "query { noSuchField }"}'),
      /: the operation "a" does not validate against the schema: Cannot query field "noSuchField" on type "Query"/,
    ],
    ["an empty object", () => writeFile("empty.json", "{}"), /: lists no operations$/],
  ])("refuses %s", (_, file, message) => {
    const path = file();
    expect(() => loadTrustedManifest(path)).toThrow(ConfigError);
    expect(() => loadTrustedManifest(path)).toThrow(message);
  });

  it("start-up stops with one line naming the variable, before opening the database", async () => {
    const database = tempDatabaseUrl();
    const file = writeFile("start.json", '{"a": "query { noSuchField }"}');
    const env = { ...process.env, PORT: "0", DATABASE_URL: database.url, TRUSTED_OPERATIONS_FILE: file };
    const error = await run(process.execPath, serverCommand(), { cwd: ROOT, env }).catch((e) => e);
    expect(error.code).toBe(2);
    expect(error.stderr.trim()).toMatch(/^runledger: TRUSTED_OPERATIONS_FILE .*start\.json: the operation "a" does not validate against the schema: .+$/);
    expect(error.stderr.trim().split("\n")).toHaveLength(1);
    expect(fs.existsSync(database.file)).toBe(false);
    database.remove();
  });
});

describe("with the manifest", () => {
  it("a real urql client runs the listed operations by id: the mutation and query over HTTP, the subscription over graphql-ws", async () => {
    const sent: Sent = { http: [], ws: [] };
    const followed = await startAndFollow(urqlById(app.url, idOf, sent), "Please calculate 6 * 7");
    expect(followed.status).toBe("COMPLETED");
    expect(followed.text).toBe("The result is 42.");
    expect(followed.toolArgs).toEqual([{ expression: "6 * 7" }]);

    // Ids only, never a document: what ran was the manifest's.
    expect(sent.http).toHaveLength(2);
    for (const { url, body } of sent.http) {
      const params = body === undefined ? Object.fromEntries(new URL(url).searchParams) : JSON.parse(body);
      expect(params.query).toBeUndefined();
      // A GET carries extensions as JSON in the URL.
      const extensions = typeof params.extensions === "string" ? JSON.parse(params.extensions) : params.extensions;
      expect(Object.keys(manifest)).toContain(extensions.persistedQuery.sha256Hash);
    }
    expect(sent.ws).toEqual([expect.objectContaining({ query: "", extensions: { persistedQuery: { version: 1, sha256Hash: idOf("FollowRun") } } })]);
  });

  it("relay-runtime runs a query relay-compiler persisted, sending its doc_id", async () => {
    expect(Object.keys(relay.manifest)).toEqual([expect.stringMatching(/^[0-9a-f]{64}$/)]);
    const { conversationId } = await startRun("relay by id");
    const network = Network.create(async (request, variables) => {
      // The artifact has the id and no text: relay-compiler kept the text in its file.
      expect(request.text).toBeNull();
      const response = await post(app.url, { doc_id: request.id, variables }, admin);
      return (await response.json()) as GraphQLResponse;
    });
    const environment = new Environment({ network, store: new Store(new RecordSource()) });
    const data = await fetchQuery<any>(environment, relay.query, { id: conversationId }).toPromise();
    expect(data).toEqual({ conversation: { id: conversationId, title: "relay by id" } });
  });

  it("takes the id as documentId and as doc_id in a plain POST", async () => {
    const id = idOf("Conversation");
    for (const body of [{ documentId: id }, { doc_id: id }]) {
      const response = await post(app.url, { ...body, variables: { id: "7b0c7f7e-0000-4000-8000-000000000000" } }, admin);
      expect(await response.json()).toEqual({ data: { conversation: null } });
    }
  });

  it("runs a listed subscription by id over SSE", async () => {
    const { runId } = await startRun("hi");
    const results: any[] = [];
    await new Promise<void>((resolve, reject) =>
      sseClient(app.url, admin).subscribe(
        { query: "", extensions: { persistedQuery: { version: 1, sha256Hash: idOf("FollowRun") } }, variables: { runId } },
        { next: (result) => results.push(result), error: reject, complete: resolve },
      ),
    );
    expect(results.at(0)).toMatchObject({ data: { runEvents: { __typename: "RunStatusEvent", status: "RUNNING" } } });
    expect(results.at(-1)).toMatchObject({ data: { runEvents: { __typename: "RunStatusEvent", status: "COMPLETED" } } });
  });

  it("an admin may still send any document, over HTTP and graphql-ws", async () => {
    expect(await gql(app.url, "{ me { id role } }", {}, admin)).toEqual({ data: { me: { id: "admin", role: "ADMIN" } } });
    const client = wsClient(app.url, { token: TOKEN });
    try {
      const result = await new Promise((resolve, reject) => {
        client.subscribe({ query: "{ me { role } }" }, { next: resolve, error: reject, complete: () => {} });
      });
      expect(result).toEqual({ data: { me: { role: "ADMIN" } } });
    } finally {
      await client.dispose();
    }
  });

  it("refuses a user's own document, over HTTP and graphql-ws, and nothing runs", async () => {
    const raw = { query: START_RUN, variables: { message: "not on the list" } };
    const response = await post(app.url, raw, userHeaders());
    expect(response.status).toBe(400);
    expect((await response.json()).errors[0].extensions.code).toBe("CANNOT_SEND_PQ_ID_AND_BODY");
    const client = wsClient(app.url, { token: userKey });
    try {
      const overWs = await new Promise((resolve) => client.subscribe(raw, { next: resolve, error: resolve, complete: () => {} }));
      expect(JSON.stringify(overWs)).toContain("CANNOT_SEND_PQ_ID_AND_BODY");
    } finally {
      await client.dispose();
    }
    // Nothing ran: the user has no conversation (an admin reads every owner's).
    const owned = await gql(app.url, `{ conversations(first: 5, owner: "ada") { totalCount } }`, {}, admin);
    expect(owned.data.conversations.totalCount).toBe(0);
  });

  it("refuses an id the manifest does not list, over HTTP, SSE and graphql-ws, admins included", async () => {
    const refusal = {
      message: "This operation is not one of the server's trusted operations (TRUSTED_OPERATIONS_FILE).",
      extensions: { code: "PERSISTED_QUERY_NOT_IN_LIST" },
    };
    const unlisted = { query: "", extensions: { persistedQuery: { version: 1, sha256Hash: UNLISTED } } };
    const response = await post(app.url, { extensions: unlisted.extensions }, admin);
    // A refusal before anything runs, like a validation error: 400 with application/graphql-response+json.
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ errors: [refusal] });

    const overSse = await new Promise((resolve) => sseClient(app.url, admin).subscribe(unlisted, { next: resolve, error: resolve, complete: () => {} }));
    expect(overSse).toEqual({ errors: [refusal] });

    const client = wsClient(app.url, { token: TOKEN });
    try {
      const overWs = await new Promise((resolve) => client.subscribe(unlisted, { next: resolve, error: resolve, complete: () => {} }));
      expect(overWs).toEqual([refusal]);
    } finally {
      await client.dispose();
    }

    // Neither a document nor an id: nothing to run.
    expect(await (await post(app.url, { variables: {} }, admin)).json()).toEqual({
      errors: [
        {
          message: "This server runs only trusted operations: send the operation's id (extensions.persistedQuery.sha256Hash, documentId or doc_id).",
          extensions: { code: "PERSISTED_QUERY_ID_REQUIRED" },
        },
      ],
    });
  });
});
