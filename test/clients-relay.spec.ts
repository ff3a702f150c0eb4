// Relay against a real runledger: relay-compiler compiles the operations against
// the committed schema.graphql, relay-runtime runs them over fetch and graphql-ws.
// Relay keys every record by its `id` and adds `id` to every selection on a type
// that has one, so a non-Node type with an `id` holding a Node's id (an error
// naming the conversation it did not find, say) would overwrite that Node's record.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { commitMutation, fetchQuery, requestSubscription, type Environment, type GraphQLTaggedNode } from "relay-runtime";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { ROOT, startTestApp, waitForRun } from "../testkit/app.ts";
import { gqlOk } from "../testkit/graphql.ts";
import { START_RUN } from "../testkit/documents.ts";
import { createRelayEnvironment } from "./clients/relay.ts";

const OPERATIONS = /* JavaScript */ `
graphql\`
  query RelayProbeConversationQuery($id: ID!) {
    conversation(id: $id) { id title }
  }
\`;
graphql\`
  mutation RelayProbeRenameMutation($conversationId: ID!, $title: String!) {
    renameConversation(input: { conversationId: $conversationId, title: $title }) {
      __typename
      ... on RenameConversationSuccess { conversation { id title } }
      ... on Error { code message }
    }
  }
\`;
graphql\`
  subscription RelayProbeRunEventsSubscription($runId: ID!) {
    runEvents(runId: $runId) {
      __typename
      seq
      ... on RunStatusEvent { status }
    }
  }
\`;
`;

/** Compiles OPERATIONS with relay-compiler against schema.graphql; returns the artifacts by operation name. */
function compileOperations(): Record<string, GraphQLTaggedNode> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-relay-"));
  fs.mkdirSync(path.join(dir, "src", "__generated__"), { recursive: true });
  fs.writeFileSync(path.join(dir, "src", "RelayProbe.js"), OPERATIONS);
  fs.writeFileSync(
    path.join(dir, "relay.config.json"),
    JSON.stringify({ src: "./src", schema: path.join(ROOT, "schema.graphql"), language: "javascript", artifactDirectory: "./src/__generated__" }),
  );
  execFileSync(process.execPath, [path.join(ROOT, "node_modules/relay-compiler/cli.js")], { cwd: dir, stdio: "pipe" });
  const require = createRequire(path.join(dir, "src", "index.js"));
  const artifacts: Record<string, GraphQLTaggedNode> = {};
  for (const name of ["RelayProbeConversationQuery", "RelayProbeRenameMutation", "RelayProbeRunEventsSubscription"]) {
    artifacts[name] = require(`./__generated__/${name}.graphql.js`);
  }
  fs.rmSync(dir, { recursive: true, force: true });
  return artifacts;
}

let fake: FakeOllama;
let app: Awaited<ReturnType<typeof startTestApp>>;
let ops: Record<string, GraphQLTaggedNode>;

beforeAll(async () => {
  ops = compileOperations();
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url });
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

function rename(environment: Environment, conversationId: string, title: string): Promise<any> {
  return new Promise((resolve, reject) => {
    commitMutation(environment, {
      mutation: ops.RelayProbeRenameMutation!,
      variables: { conversationId, title },
      onCompleted: (response, errors) => (errors?.length ? reject(new Error(JSON.stringify(errors))) : resolve(response)),
      onError: reject,
    });
  });
}

describe("Relay", () => {
  it("keeps a conversation's record intact when a rename of it, deleted elsewhere, is refused", async () => {
    const { startRun } = await gqlOk(app.url, START_RUN, { message: "hello relay" });
    const conversationId: string = startRun.conversation.id;
    await waitForRun(app.url, startRun.run.id);

    const environment = createRelayEnvironment(app.url, { webSocketImpl: WebSocket });
    const relayWarnings = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const read = await fetchQuery<any>(environment, ops.RelayProbeConversationQuery!, { id: conversationId }).toPromise();
      expect(read.conversation).toEqual({ id: conversationId, title: "hello relay" });

      // Deleted by another client; this one still shows it and tries to rename it.
      const deleted = await gqlOk(app.url, `mutation($id: ID!) { deleteConversation(input: { conversationId: $id }) { __typename } }`, { id: conversationId });
      expect(deleted.deleteConversation.__typename).toBe("DeleteConversationSuccess");
      const response = await rename(environment, conversationId, "renamed");
      expect(response.renameConversation).toMatchObject({ __typename: "NotFoundError", code: "NOT_FOUND" });

      const record = environment.getStore().getSource().get(conversationId);
      expect(record).toMatchObject({ __id: conversationId, __typename: "Conversation", id: conversationId, title: "hello relay" });
      expect(Object.keys(record!).sort()).toEqual(["__id", "__typename", "id", "title"]);
      expect(relayWarnings.mock.calls.map((call) => String(call[0]))).toEqual([]);
    } finally {
      relayWarnings.mockRestore();
    }
  });

  it("follows a run with requestSubscription over graphql-ws", async () => {
    const environment = createRelayEnvironment(app.url, { webSocketImpl: WebSocket });
    const { startRun } = await gqlOk(app.url, START_RUN, { message: "follow me" });
    const statuses = await new Promise<string[]>((resolve, reject) => {
      const seen: string[] = [];
      requestSubscription<any>(environment, {
        subscription: ops.RelayProbeRunEventsSubscription!,
        variables: { runId: startRun.run.id },
        onNext: (response) => {
          if (response?.runEvents.__typename === "RunStatusEvent") seen.push(response.runEvents.status);
        },
        onError: reject,
        onCompleted: () => resolve(seen),
      });
    });
    expect(statuses).toEqual(["RUNNING", "COMPLETED"]);
  });
});
