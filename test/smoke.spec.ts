import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "./support/fake-ollama.ts";
import { startTestApp, waitForRun } from "./support/app.ts";
import { CONVERSATION, START_RUN, gqlOk, wsClient, collect, RUN_EVENTS } from "./support/graphql.ts";
import type { App } from "../src/app.ts";

let fake: FakeOllama;
let app: App;
beforeAll(async () => {
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url });
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

describe("smoke", () => {
  it("runs a tools turn", async () => {
    const start = await gqlOk(app.url, START_RUN, { message: "Please calculate 17 * 3" });
    expect(start.startRun.__typename).toBe("StartRunSuccess");
    const client = wsClient(app.url);
    const sub = collect(client, RUN_EVENTS, { runId: start.startRun.run.id });
    const events = await sub.done;
    console.log(JSON.stringify(events.map((e: any) => e.runEvents)));
    const run = await waitForRun(app.url, start.startRun.run.id);
    console.log(run);
    const conv = await gqlOk(app.url, CONVERSATION, { id: start.startRun.conversation.id });
    console.log(JSON.stringify(conv, null, 1));
    await client.dispose();
  });
});
