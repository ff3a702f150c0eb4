// The GraphQL over HTTP audit suite of the graphql-http package, run against a
// real runledger with API_TOKEN set: every audit (MUST, SHOULD and MAY) passes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serverAudits } from "graphql-http";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { startTestApp } from "../testkit/app.ts";
import type { App } from "../src/app.ts";

const TOKEN = "audit-token-0123456789";

/** fetch with the bearer token, as any authorised client sends it. */
const authorisedFetch: typeof fetch = (input, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${TOKEN}`);
  return fetch(input, { ...init, headers });
};

let fake: FakeOllama;
let app: App;
let url = "";

beforeAll(async () => {
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url, env: { API_TOKEN: TOKEN } });
  url = `${app.url}/graphql`;
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

// The audits are listed before the server exists; each reads `url` when it runs.
const audits = serverAudits({ url: () => url, fetchFn: authorisedFetch });

describe("graphql-http server audits", () => {
  it("covers every MUST and SHOULD of the suite", () => {
    expect(audits.filter((a) => a.name.startsWith("MUST")).length).toBeGreaterThan(5);
    expect(audits.filter((a) => a.name.startsWith("SHOULD")).length).toBeGreaterThan(15);
  });

  for (const audit of audits) {
    it(`${audit.id} ${audit.name}`, async () => {
      const result = await audit.fn();
      expect({ status: result.status, reason: "reason" in result ? result.reason : undefined }).toEqual({ status: "ok", reason: undefined });
    });
  }
});

describe("the audits see the token", () => {
  it("without it the same server answers 401, so the suite above ran authorised", async () => {
    const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query: "{ __typename }" }) });
    expect(response.status).toBe(401);
  });
});
