// Webhooks (docs/webhooks.md): the SSRF guard and the backoff on their own,
// then on every deployment a real server calling a real receiver that checks
// each Standard Webhooks signature with the `standardwebhooks` library: a run's
// own webhook and WEBHOOK_URL, retries with the same webhook-id, RUN_WAITING
// with its interrupts, failures and cancels, a schedule's firings, what
// Run.webhookDeliveries shows and to whom, and bad input writing nothing.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { ROOT, startTestApp } from "../testkit/app.ts";
import { gql } from "../testkit/graphql.ts";
import { sleep, until } from "../testkit/streaming.ts";
import { startWebhookReceiver, webhookSecret, type WebhookReceiver } from "../testkit/webhook-receiver.ts";
import { createApiKey } from "../src/server/identity/api-keys.ts";
import { loadConfig } from "../src/config.ts";
import { ValidationError } from "../src/domain/errors.ts";
import { backoffMs } from "../src/webhooks/deliverer.ts";
import { isPublicAddress, publicLookup, refusalOf, requireWebhook, WebhookRefusedError } from "../src/webhooks/url-guard.ts";
import { sendWebhook, webhookSigner } from "../src/webhooks/sender.ts";
import type { App } from "../src/app.ts";
import { deployments } from "./conformance/backends.ts";

const ADMIN_TOKEN = "webhooks-admin-token";
const DELIVERIES = `id event url attempt status httpStatus deliveredAt nextAttemptAt error`;
const START = /* GraphQL */ `
  mutation Start($input: StartRunInput!) {
    startRun(input: $input) {
      __typename
      ... on StartRunSuccess { run { id } conversation { id } }
      ... on Error { code message }
      ... on ValidationError { field }
    }
  }
`;
const RESUME = /* GraphQL */ `
  mutation Resume($input: ResumeRunInput!) {
    resumeRun(input: $input) { __typename ... on ResumeRunSuccess { run { id } } ... on Error { code message } }
  }
`;
const CANCEL = `mutation($id: ID!) { cancelRun(input: { runId: $id }) { __typename } }`;
const RUN = `query($id: ID!) { run(id: $id) { id status errorCode schedule { id } webhookDeliveries { ${DELIVERIES} } } }`;
const INTERRUPTS = `query($id: ID!) { conversation(id: $id) { pendingInterrupts { id } } }`;
const CREATE_SCHEDULE = /* GraphQL */ `
  mutation Create($input: CreateScheduleInput!) {
    createSchedule(input: $input) { __typename ... on CreateScheduleSuccess { schedule { id } } ... on Error { code message } ... on ValidationError { field } }
  }
`;
const COUNT = `query { conversations(first: 100) { edges { node { id } } } }`;

describe("the SSRF guard", () => {
  it("takes only global unicast addresses", () => {
    for (const a of ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"]) expect(isPublicAddress(a), a).toBe(true);
    for (const a of [
      "127.0.0.1",
      "10.1.2.3",
      "172.16.0.1",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "::1",
      "fe80::1",
      "fd00::1",
      "::ffff:127.0.0.1",
      "224.0.0.1",
      "not an address",
    ])
      expect(isPublicAddress(a), a).toBe(false);
  });

  it("refuses at input what names a private place, and non-HTTP schemes, unless private targets are allowed", () => {
    const refused = (u: string, allow = false) => refusalOf(new URL(u), allow);
    for (const u of [
      "http://localhost:9/x",
      "http://LOCALHOST./x",
      "http://api.localhost/x",
      "http://127.0.0.1/x",
      "http://0x7f.1/x",
      "http://[::1]:8080/",
      "http://169.254.169.254/latest/meta-data",
      "https://10.0.0.7/",
    ])
      expect(refused(u), u).toMatch(/WEBHOOK_ALLOW_PRIVATE/);
    expect(refused("ftp://example.com/x")).toMatch(/http or https/);
    expect(refused("ftp://example.com/x", true)).toMatch(/http or https/);
    expect(refused("https://example.com/hook")).toBeNull();
    expect(refused("http://127.0.0.1/x", true)).toBeNull();
  });

  it("answers a ValidationError on the field at fault, and none at all without WEBHOOK_SECRET", () => {
    const policy = { allowPrivate: false, canSign: true };
    const fieldOf = (f: () => unknown) => {
      try {
        f();
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        return (error as ValidationError).field;
      }
      throw new Error("not refused");
    };
    expect(fieldOf(() => requireWebhook({ url: "https://example.com/" }, { allowPrivate: true, canSign: false }))).toBe("webhook");
    expect(fieldOf(() => requireWebhook({ url: "example.com/hook" }, policy))).toBe("webhook.url");
    expect(fieldOf(() => requireWebhook({ url: `https://example.com/${"x".repeat(2050)}` }, policy))).toBe("webhook.url");
    expect(fieldOf(() => requireWebhook({ url: "https://example.com/", events: [] }, policy))).toBe("webhook.events");
    expect(requireWebhook({ url: " https://example.com/hook ", events: ["RUN_WAITING"] }, policy)).toEqual({
      url: "https://example.com/hook",
      events: ["RUN_WAITING"],
    });
    expect(requireWebhook({ url: "https://example.com/hook" }, policy).events).toEqual(["RUN_ENDED", "RUN_WAITING"]);
  });

  it("refuses at delivery a name that resolves to a private address, through the lookup the connection uses", async () => {
    const lookup = publicLookup(false);
    const error = await new Promise<Error | null>((resolve) => lookup("localhost", {}, (e) => resolve(e)));
    expect(error).toBeInstanceOf(WebhookRefusedError);
    expect(error!.message).toMatch(/localhost resolves to .*not a public address/);
    const allowed = await new Promise<string>((resolve, reject) =>
      publicLookup(true)("localhost", {}, (e, address) => (e ? reject(e) : resolve(address as string))),
    );
    expect(isPublicAddress(allowed)).toBe(false);
    // And sendWebhook stops a private literal before any connection, as refused (not retried).
    const result = await sendWebhook(
      { id: "msg_x", url: "http://127.0.0.1:9/hook", payload: "{}" },
      { signer: webhookSigner(webhookSecret()), allowPrivate: false, timeoutMs: 1000, userAgent: "test" },
    );
    expect(result).toMatchObject({ ok: false, refused: true, httpStatus: null });
  });
});

describe("the retry backoff", () => {
  it("doubles from WEBHOOK_RETRY_MS, within 20 % either way, and never waits more than an hour", () => {
    const mid = () => 0.5;
    expect([1, 2, 3, 4].map((n) => backoffMs(n, 5_000, mid))).toEqual([5_000, 10_000, 20_000, 40_000]);
    expect(backoffMs(1, 5_000, () => 0)).toBe(4_000);
    expect(backoffMs(1, 5_000, () => 1)).toBe(6_000);
    expect(backoffMs(30, 5_000, mid)).toBe(3_600_000);
  });
});

describe("webhook settings", () => {
  it("refuse WEBHOOK_URL without WEBHOOK_SECRET, a malformed secret, and a URL that is not http(s)", () => {
    expect(() => loadConfig({ WEBHOOK_URL: "https://example.com/hook" })).toThrow(/WEBHOOK_SECRET is not/);
    expect(() => loadConfig({ WEBHOOK_SECRET: "not-a-secret" })).toThrow(/WEBHOOK_SECRET must be whsec_/);
    expect(() => loadConfig({ WEBHOOK_SECRET: "whsec_c2hvcnQ=" })).toThrow(/24 to 64/);
    expect(() => loadConfig({ WEBHOOK_SECRET: webhookSecret(), WEBHOOK_URL: "mailto:ops@example.com" })).toThrow(/WEBHOOK_URL must be an http/);
    const config = loadConfig({ WEBHOOK_SECRET: webhookSecret(), WEBHOOK_URL: "https://example.com/hook" });
    expect(config.webhooks).toMatchObject({ url: "https://example.com/hook", allowPrivate: false, pollMs: 5000, retryMs: 5000, retryWindowMs: 86_400_000 });
  });
});

function agentsFile(agentHook: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-webhooks-"));
  const file = path.join(dir, "agents.json");
  const ask = path.join(ROOT, "test", "fixtures", "graphs", "ask.ts");
  fs.writeFileSync(
    file,
    JSON.stringify({
      agents: {
        default: { type: "chat" },
        interviewer: { type: "graph", module: ask, export: "graph" },
        hooked: { type: "chat", webhook: { url: agentHook, events: ["RUN_ENDED"] } },
      },
    }),
  );
  return file;
}

for (const deployment of deployments) {
  describe(`webhooks: ${deployment.name}`, () => {
    let fake: FakeOllama;
    let receiver: WebhookReceiver;
    let app: App;
    let strict: App | undefined;
    let cleanup: () => Promise<void>;
    const secret = webhookSecret();
    const keys: Record<"alice" | "bob", string> = { alice: "", bob: "" };
    type Who = keyof typeof keys | "admin";
    const as = (who: Who) => ({ authorization: `Bearer ${who === "admin" ? ADMIN_TOKEN : keys[who]}` });
    const call = async (who: Who, query: string, variables?: Record<string, unknown>, url = app.url) => {
      const result = await gql(url, query, variables, as(who));
      if (result.errors?.length) throw new Error(`GraphQL errors: ${JSON.stringify(result.errors)}`);
      return result.data;
    };
    const run = async (id: string, who: Who = "alice") => (await call(who, RUN, { id })).run;
    const settled = (id: string, status: string) => until(async () => ((await run(id))?.status === status ? run(id) : null), `run ${status}`);
    const start = async (input: Record<string, unknown>, who: Who = "alice") => (await call(who, START, { input: { message: "hello", ...input } })).startRun;
    const at = (p: string) => `${receiver.url}${p}`;
    const receivedFor = (p: string, runId: string) => receiver.received.filter((r) => r.path === p && r.body.data?.runId === runId);
    const deliveredTo = (runId: string, n: number) =>
      until(async () => {
        const r = await run(runId);
        return r.webhookDeliveries.length >= n && r.webhookDeliveries.every((d: { status: string }) => d.status !== "PENDING") && r;
      }, "deliveries settled");

    beforeAll(async () => {
      fake = await startFakeOllama();
      receiver = await startWebhookReceiver(secret);
      const selected = await deployment.env();
      cleanup = selected.cleanup;
      app = await startTestApp({
        ollamaUrl: fake.url,
        env: {
          API_TOKEN: ADMIN_TOKEN,
          RUNLEDGER_CONFIG: agentsFile(`${receiver.url}/agent`),
          WEBHOOK_SECRET: secret,
          WEBHOOK_URL: `${receiver.url}/all`,
          WEBHOOK_ALLOW_PRIVATE: "true",
          WEBHOOK_POLL_MS: "50",
          WEBHOOK_RETRY_MS: "100",
          SCHEDULE_POLL_MS: "100",
          QUEUE_POLL_MS: "100",
          ...selected.env,
        },
      });
      keys.alice = (await createApiKey(app.storage.apiKeys, { userId: "alice", role: "user", label: null })).key;
      keys.bob = (await createApiKey(app.storage.apiKeys, { userId: "bob", role: "user", label: null })).key;
    }, 60_000);
    afterAll(async () => {
      await strict?.close();
      await app?.close();
      await receiver?.close();
      await fake?.close();
      await cleanup?.();
    }, 60_000);

    it("tells a completed run's end to its own URL and to WEBHOOK_URL, each signed, and shows each delivery on the run to whoever sees the run", async () => {
      fake.enqueue({ kind: "text", tokens: ["all ", "done"] });
      const started = await start({ webhook: { url: at("/own") } });
      expect(started.__typename).toBe("StartRunSuccess");
      const runId = started.run.id;
      await settled(runId, "COMPLETED");
      const r = await deliveredTo(runId, 2);
      expect(r.webhookDeliveries.map((d: { url: string }) => d.url).sort()).toEqual([at("/all"), at("/own")]);
      for (const d of r.webhookDeliveries) {
        expect(d).toMatchObject({ event: "RUN_ENDED", attempt: 1, status: "DELIVERED", httpStatus: 200, nextAttemptAt: null, error: null });
        expect(d.id).toMatch(/^msg_/);
        expect(Date.parse(d.deliveredAt)).toBeGreaterThan(0);
      }
      const own = receivedFor("/own", runId);
      const all = receivedFor("/all", runId);
      expect(own).toHaveLength(1);
      expect(all).toHaveLength(1);
      for (const got of [...own, ...all]) {
        expect(got.verified, got.verifyError ?? "").toBe(true);
        expect(got.body).toMatchObject({
          type: "run.ended",
          data: { runId, conversationId: started.conversation.id, kind: "START", status: "COMPLETED", errorCode: null, interrupts: [] },
        });
        expect(got.body.data.usage.outputTokens).toBeGreaterThan(0);
      }
      // The webhook-id a receiver sees is the delivery's id; the two targets get their own.
      expect(new Set(r.webhookDeliveries.map((d: { id: string }) => d.id))).toEqual(new Set([own[0]!.id, all[0]!.id]));
      // Another user does not see the run, so not its deliveries either; an admin does.
      expect(await run(runId, "bob")).toBeNull();
      expect((await run(runId, "admin")).webhookDeliveries).toHaveLength(2);
    });

    it("tells every run of an agent with a webhook in the agent file there too", async () => {
      const runId = (await start({ agent: "hooked", message: "hooked" })).run.id;
      await settled(runId, "COMPLETED");
      const r = await deliveredTo(runId, 2);
      expect(r.webhookDeliveries.map((d: { url: string; status: string }) => [d.url, d.status]).sort()).toEqual([
        [at("/agent"), "DELIVERED"],
        [at("/all"), "DELIVERED"],
      ]);
      expect(receivedFor("/agent", runId).map((g) => [g.verified, g.body.type])).toEqual([[true, "run.ended"]]);
      // Other agents' runs are not told there.
      expect(receiver.received.filter((g) => g.path === "/agent" && g.body.data.runId !== runId)).toEqual([]);
    });

    it("tries a failing receiver again, later each time, with the same webhook-id and a valid signature, until it answers 2xx", async () => {
      receiver.failNext("/flaky", 2, 503);
      const runId = (await start({ webhook: { url: at("/flaky"), events: ["RUN_ENDED"] } })).run.id;
      await settled(runId, "COMPLETED");
      const r = await deliveredTo(runId, 2);
      const flaky = r.webhookDeliveries.find((d: { url: string }) => d.url === at("/flaky"));
      expect(flaky).toMatchObject({ status: "DELIVERED", attempt: 3, httpStatus: 200, error: null });
      const got = receivedFor("/flaky", runId);
      expect(got.map((g) => g.answered)).toEqual([503, 503, 200]);
      expect(new Set(got.map((g) => g.id))).toEqual(new Set([flaky.id]));
      for (const g of got) expect(g.verified, g.verifyError ?? "").toBe(true);
      // WEBHOOK_RETRY_MS 100, doubling, at least 80 % of it: the second wait is the longer.
      expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(80);
      expect(got[2]!.at - got[1]!.at).toBeGreaterThanOrEqual(160);
    });

    it("tells a WAITING run's interrupts (RUN_WAITING); the resume's end goes to the resume's own webhook, not the first run's", async () => {
      const first = await start({ agent: "interviewer", message: "who is on call?", webhook: { url: at("/wait"), events: ["RUN_WAITING"] } });
      const runId = first.run.id;
      await settled(runId, "WAITING");
      await deliveredTo(runId, 2);
      const [waiting] = receivedFor("/wait", runId);
      expect(waiting!.verified).toBe(true);
      expect(waiting!.body).toMatchObject({ type: "run.waiting", data: { status: "WAITING", errorCode: null } });
      const interrupts = (await call("alice", INTERRUPTS, { id: first.conversation.id })).conversation.pendingInterrupts;
      expect(waiting!.body.data.interrupts).toEqual([{ id: interrupts[0].id, node: "ask", value: { question: 'Who should answer "who is on call?"?' } }]);
      expect(receivedFor("/all", runId).map((g) => g.body.type)).toEqual(["run.waiting"]);

      const resumed = await call("alice", RESUME, {
        input: {
          conversationId: first.conversation.id,
          responses: [{ interruptId: interrupts[0].id, value: { name: "Ada" } }],
          webhook: { url: at("/resumed") },
        },
      });
      const resumeId = resumed.resumeRun.run.id;
      await settled(resumeId, "COMPLETED");
      await deliveredTo(resumeId, 2);
      expect(receivedFor("/resumed", resumeId).map((g) => [g.body.type, g.body.data.kind, g.body.data.status])).toEqual([["run.ended", "RESUME", "COMPLETED"]]);
      expect(receiver.received.filter((g) => g.path === "/wait")).toHaveLength(1);
    });

    it("tells failures and cancels with their error code, and nothing to a URL that asked only for RUN_WAITING", async () => {
      fake.enqueue({ kind: "httpError", status: 500, error: "the model broke" });
      const failed = (await start({ message: "break", webhook: { url: at("/waits-only"), events: ["RUN_WAITING"] } })).run.id;
      await settled(failed, "FAILED");
      fake.enqueue({ kind: "silence" });
      const cancelled = (await start({ message: "wait for ever" })).run.id;
      await until(async () => (await run(cancelled)).status === "RUNNING", "running");
      await until(() => fake.asked("wait for ever") > 0, "its model request, which takes the silence");
      await call("alice", CANCEL, { id: cancelled });
      await settled(cancelled, "CANCELLED");
      await deliveredTo(failed, 1);
      await deliveredTo(cancelled, 1);
      expect(receivedFor("/all", failed)[0]!.body.data).toMatchObject({ status: "FAILED", errorCode: "MODEL_ERROR" });
      expect(receivedFor("/all", cancelled)[0]!.body.data).toMatchObject({ status: "CANCELLED", errorCode: "CANCELLED" });
      expect((await run(failed)).webhookDeliveries.map((d: { url: string }) => d.url)).toEqual([at("/all")]);
      expect(receiver.received.filter((g) => g.path === "/waits-only")).toEqual([]);
    });

    it("gives each of a schedule's firings the schedule's webhook", async () => {
      const created = (
        await call("alice", CREATE_SCHEDULE, {
          input: { agent: "default", cron: "* * * * * *", timezone: "UTC", message: "tick", webhook: { url: at("/scheduled") } },
        })
      ).createSchedule;
      expect(created.__typename).toBe("CreateScheduleSuccess");
      const got = await until(async () => receiver.received.find((g) => g.path === "/scheduled" && g.body.type === "run.ended"), "a firing's webhook");
      expect(got.verified).toBe(true);
      expect((await run(got.body.data.runId)).schedule).toEqual({ id: created.schedule.id });
      await call("alice", `mutation($id: ID!) { deleteSchedule(input: { scheduleId: $id }) { __typename } }`, { id: created.schedule.id });
    });

    it("refuses a bad webhook with a ValidationError on its field, writing nothing", async () => {
      const before = (await call("alice", COUNT)).conversations.edges.length;
      for (const [webhook, field] of [
        [{ url: "ftp://example.com/hook" }, "webhook.url"],
        [{ url: "not a url" }, "webhook.url"],
        [{ url: at("/x"), events: [] }, "webhook.events"],
      ] as const) {
        expect(await start({ webhook })).toMatchObject({ __typename: "ValidationError", code: "VALIDATION", field });
        const schedule = (await call("alice", CREATE_SCHEDULE, { input: { agent: "default", cron: "* * * * *", timezone: "UTC", message: "m", webhook } }))
          .createSchedule;
        expect(schedule).toMatchObject({ __typename: "ValidationError", field });
      }
      expect((await call("alice", COUNT)).conversations.edges.length).toBe(before);
    });

    if (deployment === deployments[0]) {
      it("gives a delivery up as FAILED once WEBHOOK_RETRY_WINDOW_MS has passed, with its last answer", async () => {
        receiver.failNext("/down", 1000, 500);
        const brief = await startTestApp({
          ollamaUrl: fake.url,
          env: { WEBHOOK_SECRET: secret, WEBHOOK_ALLOW_PRIVATE: "true", WEBHOOK_POLL_MS: "20", WEBHOOK_RETRY_MS: "50", WEBHOOK_RETRY_WINDOW_MS: "400" },
        });
        try {
          const { startRun } = (await gql(brief.url, START, { input: { message: "to a dead end", webhook: { url: at("/down") } } })).data;
          const given = await until(async () => {
            const { run } = (await gql(brief.url, RUN, { id: startRun.run.id })).data;
            return run.webhookDeliveries[0]?.status === "FAILED" && run.webhookDeliveries[0];
          }, "the delivery given up");
          expect(given).toMatchObject({ httpStatus: 500, error: "HTTP 500", nextAttemptAt: null, deliveredAt: null });
          const tries = receiver.received.filter((g) => g.path === "/down" && g.body.data.runId === startRun.run.id);
          expect(given.attempt).toBe(tries.length);
          expect(tries.length).toBeGreaterThanOrEqual(2);
          // Nothing more once given up.
          await sleep(300);
          expect(receiver.received.filter((g) => g.path === "/down" && g.body.data.runId === startRun.run.id)).toHaveLength(tries.length);
        } finally {
          await brief.close();
        }
      });

      it("looks for deliveries when a run ends, not only every WEBHOOK_POLL_MS", async () => {
        const idle = await startTestApp({
          ollamaUrl: fake.url,
          env: { WEBHOOK_SECRET: secret, WEBHOOK_ALLOW_PRIVATE: "true", WEBHOOK_URL: at("/nudged"), WEBHOOK_POLL_MS: "3600000" },
        });
        try {
          await sleep(200); // its first look, at start, is over
          const { startRun } = (await gql(idle.url, START, { input: { message: "quick" } })).data;
          const got = await until(() => receiver.received.find((g) => g.path === "/nudged" && g.body.data.runId === startRun.run.id), "the delivery", 10_000);
          expect(got.body.data.status).toBe("COMPLETED");
        } finally {
          await idle.close();
        }
      });

      it("without WEBHOOK_ALLOW_PRIVATE refuses private and loopback targets at input, and a private WEBHOOK_URL stops start-up", async () => {
        strict = await startTestApp({ ollamaUrl: fake.url, env: { WEBHOOK_SECRET: secret } });
        for (const url of [at("/x"), "http://10.1.2.3/hook", "http://[::1]/hook", "http://169.254.169.254/latest/meta-data", "http://localhost:8080/"]) {
          const refused = (await gql(strict.url, START, { input: { message: "m", webhook: { url } } })).data.startRun;
          expect(refused, url).toMatchObject({ __typename: "ValidationError", field: "webhook.url" });
          expect(refused.message).toMatch(/WEBHOOK_ALLOW_PRIVATE/);
        }
        expect((await gql(strict.url, COUNT)).data.conversations.edges).toEqual([]);
        await expect(
          startTestApp({ ollamaUrl: fake.url, env: { WEBHOOK_SECRET: secret, RUNLEDGER_CONFIG: agentsFile("http://10.0.0.9/hook") } }),
        ).rejects.toThrow(/agents\.hooked\.webhook: .*WEBHOOK_ALLOW_PRIVATE/);
        await expect(startTestApp({ ollamaUrl: fake.url, env: { WEBHOOK_SECRET: secret, WEBHOOK_URL: "http://127.0.0.1:9/hook" } })).rejects.toThrow(
          /WEBHOOK_URL: .*WEBHOOK_ALLOW_PRIVATE/,
        );
        const unsigned = await startTestApp({ ollamaUrl: fake.url, env: {} });
        try {
          const refused = (await gql(unsigned.url, START, { input: { message: "m", webhook: { url: "https://example.com/hook" } } })).data.startRun;
          expect(refused).toMatchObject({ __typename: "ValidationError", field: "webhook" });
          expect(refused.message).toMatch(/WEBHOOK_SECRET/);
        } finally {
          await unsigned.close();
        }
      });
    }
  });
}
