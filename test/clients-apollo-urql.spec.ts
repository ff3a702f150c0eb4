// Apollo Client 4 and urql against a real runledger, set up as docs/clients.md shows
// (test/clients/*.ts): queries and mutations over HTTP, subscriptions over
// graphql-ws, and typed refusals (an Error interface inside a result union).
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { format } from "node:util";
import WebSocket from "ws";
import { gql } from "@apollo/client";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp, waitForRun } from "../testkit/app.ts";
import { startRun } from "../testkit/graphql.ts";
import { createApolloClient } from "./clients/apollo.ts";
import { createUrqlClient } from "./clients/urql.ts";

const UNKNOWN = "7b0c7f7e-0000-4000-8000-000000000000";

const RENAME = /* GraphQL */ `
  mutation Rename($id: ID!, $title: String!) {
    renameConversation(input: { conversationId: $id, title: $title }) {
      __typename
      ... on RenameConversationSuccess { conversation { id title } }
      ... on Error { code message }
    }
  }
`;

const CONVERSATION = /* GraphQL */ `
  query Conversation($id: ID!) {
    conversation(id: $id) { id title messageCount runs(first: 5) { edges { node { id status } } } }
  }
`;

const FOLLOW = /* GraphQL */ `
  subscription Follow($runId: ID!) {
    runEvents(runId: $runId) {
      __typename
      seq
      ... on TokenEvent { text }
      ... on RunStatusEvent { status }
    }
  }
`;

/** What Apollo prints to console.warn and console.error (its warnings), from now until the test ends. */
function watchConsole(): { lines(): string[] } {
  const spies = [vi.spyOn(console, "warn").mockImplementation(() => {}), vi.spyOn(console, "error").mockImplementation(() => {})];
  onTestFinished(() => spies.forEach((spy) => spy.mockRestore()));
  return { lines: () => spies.flatMap((spy) => spy.mock.calls.map((call) => format(...call))) };
}

let fake: FakeOllama;
let app: Awaited<ReturnType<typeof startTestApp>>;

beforeAll(async () => {
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url });
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

describe("Apollo Client 4", () => {
  it("gets a refusal's code and message with the generated possibleTypes, and loses them without", async () => {
    const warnings = watchConsole();
    const withTypes = createApolloClient(app.url, { webSocketImpl: WebSocket });
    const refused = await withTypes.mutate({ mutation: gql(RENAME), variables: { id: UNKNOWN, title: "x" } });
    expect(refused.data).toEqual({
      renameConversation: { __typename: "NotFoundError", code: "NOT_FOUND", message: `Conversation "${UNKNOWN}" does not exist` },
    });

    expect(warnings.lines()).toEqual([]);

    // The same client with an empty map: Apollo's cache cannot match `... on Error`.
    const withoutTypes = createApolloClient(app.url, { webSocketImpl: WebSocket, possibleTypes: {} });
    const bare = await withoutTypes.mutate({ mutation: gql(RENAME), variables: { id: UNKNOWN, title: "x" } });
    expect(bare.data).toEqual({ renameConversation: { __typename: "NotFoundError" } });
    expect(warnings.lines().join("\n")).toContain("Cannot match inline fragment on `Error` against `NotFoundError`");
  });

  it("starts a run, follows it over graphql-ws and reads the conversation, without a warning", async () => {
    const warnings = watchConsole();
    const client = createApolloClient(app.url, { webSocketImpl: WebSocket });
    const { runId, conversationId } = await startRun(app.url, "hello apollo");
    const events = await new Promise<any[]>((resolve, reject) => {
      const seen: any[] = [];
      client.subscribe<{ runEvents: any }>({ query: gql(FOLLOW), variables: { runId } }).subscribe({
        next: (result) => (result.error ? reject(result.error) : seen.push(result.data!.runEvents)),
        error: reject,
        complete: () => resolve(seen),
      });
    });
    expect(events.at(0)).toMatchObject({ __typename: "RunStatusEvent", status: "RUNNING" });
    expect(events.at(-1)).toMatchObject({ __typename: "RunStatusEvent", status: "COMPLETED" });
    expect(
      events
        .filter((e) => e.__typename === "TokenEvent")
        .map((e) => e.text)
        .join(""),
    ).toBe("Echo: hello apollo");

    const { data } = await client.query({ query: gql(CONVERSATION), variables: { id: conversationId }, fetchPolicy: "network-only" });
    expect(data).toMatchObject({
      conversation: { id: conversationId, title: "hello apollo", runs: { edges: [{ node: { id: runId, status: "COMPLETED" } }] } },
    });
    expect(warnings.lines()).toEqual([]);
  });
});

describe("urql", () => {
  it("starts a run, follows it over graphql-ws, reads the conversation and gets a refusal's code and message", async () => {
    const client = createUrqlClient(app.url, { webSocketImpl: WebSocket });
    const { runId, conversationId } = await startRun(app.url, "hello urql");
    const events = await new Promise<any[]>((resolve, reject) => {
      const seen: any[] = [];
      const { unsubscribe } = client.subscription(FOLLOW, { runId }).subscribe((result) => {
        if (result.error) return reject(result.error);
        seen.push(result.data.runEvents);
        if (result.data.runEvents.__typename === "RunStatusEvent" && result.data.runEvents.status !== "RUNNING") {
          unsubscribe();
          resolve(seen);
        }
      });
    });
    expect(events.at(0)).toMatchObject({ status: "RUNNING" });
    expect(events.at(-1)).toMatchObject({ status: "COMPLETED" });
    expect(
      events
        .filter((e) => e.__typename === "TokenEvent")
        .map((e) => e.text)
        .join(""),
    ).toBe("Echo: hello urql");

    const read = await client.query(CONVERSATION, { id: conversationId }).toPromise();
    expect(read.error).toBeUndefined();
    expect(read.data.conversation).toMatchObject({ id: conversationId, title: "hello urql" });

    const refused = await client.mutation(RENAME, { id: UNKNOWN, title: "x" }).toPromise();
    expect(refused.data.renameConversation).toEqual({ __typename: "NotFoundError", code: "NOT_FOUND", message: `Conversation "${UNKNOWN}" does not exist` });
    await waitForRun(app.url, runId);
  });
});
