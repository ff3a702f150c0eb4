// Retention (docs/retention.md) on every deployment: a real server that never
// sweeps holds the data; sweeping instances on the same database are started
// with the policy under test and closed after it. "Idle N days" and "ended N
// days ago" are set in the database rather than waited for. Conversations
// expire by the deployment's days, an agent's or their own (owner-scoped
// setConversationExpiry); checkpoint pruning leaves every run's checkpoints as
// they were minus the pruned ones, and fork, editState and resume still work
// from what is kept; old run events go; /metrics and /ready show the sweeper;
// two instances never sweep at once; the dry-run CLI deletes nothing.
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { defaultResponder, startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { ROOT, startTestApp } from "../testkit/app.ts";
import { gql } from "../testkit/graphql.ts";
import { START_AGENT_RUN } from "../testkit/documents.ts";
import { parsePrometheus, sampleValue } from "../testkit/prometheus.ts";
import { sleep, until } from "../testkit/streaming.ts";
import { createApiKey } from "../src/server/identity/api-keys.ts";
import { openSqlite } from "../src/storage/sqlite/database.ts";
import { formatSqliteDate } from "../src/storage/sqlite/rows.ts";
import type { App } from "../src/app.ts";
import { deployments } from "./conformance/backends.ts";

const exec = promisify(execFile);
const ADMIN_TOKEN = "retention-admin-token";
const DAY = 24 * 60 * 60 * 1000;
const SET_EXPIRY = /* GraphQL */ `
  mutation($id: ID!, $at: DateTime) {
    setConversationExpiry(input: { conversationId: $id, expiresAt: $at }) {
      __typename
      ... on SetConversationExpirySuccess { conversation { id expiresAt } }
      ... on Error { code }
      ... on ValidationError { field }
      ... on NotFoundError { entity }
    }
  }
`;
const EXPIRY = `query($id: ID!) { conversation(id: $id) { id expiresAt updatedAt } }`;
const RUN_CHECKPOINTS = `query($id: ID!) { run(id: $id) { id status checkpoints { id step } } }`;
const CONVERSATION_CHECKPOINTS = `query($id: ID!) { conversation(id: $id) { runs(first: 100) { edges { node { id } } } checkpoints(first: 100) { edges { node { id run { id } } } } } }`;

for (const deployment of deployments) {
  describe(`retention: ${deployment.name}`, () => {
    let fake: FakeOllama;
    let app: App & { databaseFile: string };
    let env: Record<string, string>;
    let cleanup: () => Promise<void>;
    const sweepers: App[] = [];
    const keys = { alice: "", bob: "" };
    type Who = keyof typeof keys | "admin";
    const call = async (who: Who, query: string, variables?: Record<string, unknown>, url = app.url) => {
      const result = await gql(url, query, variables, { authorization: `Bearer ${who === "admin" ? ADMIN_TOKEN : keys[who]}` });
      if (result.errors?.length) throw new Error(`GraphQL errors: ${JSON.stringify(result.errors)}`);
      return result.data;
    };

    /** Runs one SQL statement on the deployment's database (`?` placeholders, numbered for PostgreSQL). */
    async function sql(text: string, params: unknown[]): Promise<void> {
      if (env.DATABASE_URL!.startsWith("file:")) {
        const db = openSqlite(app.databaseFile);
        try {
          db.prepare(text).run(...params.map((p) => (p instanceof Date ? formatSqliteDate(p) : p)));
        } finally {
          db.close();
        }
        return;
      }
      const client = new pg.Client({ connectionString: env.DATABASE_URL });
      await client.connect();
      let n = 0;
      await client
        .query(
          text.replace(/\?/g, () => `$${++n}`),
          params,
        )
        .finally(() => client.end());
    }
    const idleSince = (conversationId: string, days: number) =>
      sql(`UPDATE conversations SET updated_at = ? WHERE id = ?`, [new Date(Date.now() - days * DAY), conversationId]);

    /** Another instance on the same database that sweeps every 100 ms with these settings. */
    async function sweeper(settings: Record<string, string>): Promise<App> {
      const started = await startTestApp({ ollamaUrl: fake.url, env: { ...env, RETENTION_SWEEP_MS: "100", ...settings } });
      sweepers.push(started);
      return started;
    }
    async function closeSweepers() {
      for (const s of sweepers.splice(0)) await s.close();
    }
    const metrics = async (url: string) =>
      parsePrometheus(await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text());
    const TERMINAL = ["COMPLETED", "FAILED", "CANCELLED", "INTERRUPTED", "WAITING"];
    /** The run once it has an outcome. */
    const waitForRun = (url: string, id: string) =>
      until(async () => {
        const { run } = await call("admin", `query($id: ID!) { run(id: $id) { id status } }`, { id }, url);
        return TERMINAL.includes(run.status) && run;
      }, `run ${id} ended`);
    const readiness = async (url: string) => (await (await fetch(`${url}/ready`)).json()) as { retention: { state: string; lastSweepAt: string | null } };

    async function turn(who: Who, message: string, agent = "default", conversationId?: string) {
      const { startRun } = await call(who, START_AGENT_RUN, { message, agent, conversationId });
      expect(startRun.__typename).toBe("StartRunSuccess");
      const run = await waitForRun(app.url, startRun.run.id);
      return { runId: startRun.run.id as string, conversationId: startRun.conversation.id as string, status: run.status as string };
    }
    const exists = async (conversationId: string) => (await app.storage.runs.getConversation(conversationId)) !== null;

    beforeAll(async () => {
      fake = await startFakeOllama();
      fake.setResponder(defaultResponder);
      const agents = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "runledger-retention-")), "agents.json");
      fs.writeFileSync(
        agents,
        JSON.stringify({
          agents: {
            default: { type: "chat" },
            brief: { type: "chat", retention: { conversationDays: 2 } },
            careful: { type: "chat", tools: ["calculator"], requireApproval: ["calculator"] },
          },
        }),
      );
      const selected = await deployment.env();
      cleanup = selected.cleanup;
      // The instance holding the data never sweeps while the suite runs.
      env = {
        API_TOKEN: ADMIN_TOKEN,
        RUNLEDGER_CONFIG: agents,
        RETENTION_SWEEP_MS: "3600000",
        RUN_HEARTBEAT_MS: "60000",
        RUN_LEASE_MS: "600000",
        ...selected.env,
      };
      app = await startTestApp({ ollamaUrl: fake.url, env });
      if (!env.DATABASE_URL) env.DATABASE_URL = `file:${app.databaseFile}`;
      keys.alice = (await createApiKey(app.storage.apiKeys, { userId: "alice", role: "user", label: null })).key;
      keys.bob = (await createApiKey(app.storage.apiKeys, { userId: "bob", role: "user", label: null })).key;
    }, 60_000);
    // A test that fails leaves no sweeper behind to sweep the next one's data.
    afterEach(closeSweepers, 60_000);
    afterAll(async () => {
      await closeSweepers();
      await app?.close();
      await fake?.close();
      await cleanup?.();
    }, 60_000);

    it("answers Conversation.expiresAt as the effective expiry; setConversationExpiry is its owner's (or an admin's), and bad input changes nothing", async () => {
      const plain = await turn("alice", "Hello there");
      const brief = await turn("alice", "Hello there", "brief");
      const read = async (id: string, who: Who = "alice") => (await call(who, EXPIRY, { id })).conversation;
      expect((await read(plain.conversationId)).expiresAt).toBeNull(); // no days anywhere: kept forever
      const briefRow = await read(brief.conversationId);
      expect(Date.parse(briefRow.expiresAt) - Date.parse(briefRow.updatedAt)).toBe(2 * DAY);

      const at = "2031-02-03T04:05:06.789Z";
      const set = async (who: Who, id: string, when: string | null) => (await call(who, SET_EXPIRY, { id, at: when })).setConversationExpiry;
      // conversationsChanged subscribers are told of the new expiresAt.
      const changes = await app.services.bus.subscribeConversationChanges();
      expect(await set("alice", plain.conversationId, at)).toEqual({
        __typename: "SetConversationExpirySuccess",
        conversation: { id: plain.conversationId, expiresAt: at },
      });
      for (;;) {
        const { value } = await changes.next();
        if (value.conversationId === plain.conversationId) {
          expect(value.kind).toBe("updated");
          break;
        }
      }
      await changes.return?.();
      expect(await set("bob", plain.conversationId, "2040-01-01T00:00:00.000Z")).toEqual({
        __typename: "NotFoundError",
        code: "NOT_FOUND",
        entity: "Conversation",
      });
      expect(await set("alice", "not-a-uuid", at)).toEqual({ __typename: "ValidationError", code: "VALIDATION", field: "conversationId" });
      expect(await set("alice", plain.conversationId, "+010000-01-01T00:00:00.000Z")).toEqual({
        __typename: "ValidationError",
        code: "VALIDATION",
        field: "expiresAt",
      });
      expect((await read(plain.conversationId)).expiresAt).toBe(at);
      // An explicit date wins over the agent's days; null clears it.
      expect((await set("admin", brief.conversationId, at)).conversation.expiresAt).toBe(at);
      expect((await set("alice", brief.conversationId, null)).conversation.expiresAt).toBe(briefRow.expiresAt);
      expect((await set("alice", plain.conversationId, null)).conversation.expiresAt).toBeNull();
      expect(await read(plain.conversationId, "bob")).toBeNull();
    });

    it("deletes idle conversations by the deployment's and the agent's days and by their own expiry, with their threads, and old runs' events; /metrics and /ready show it", async () => {
      const [old, recent, briefOld, briefNew, ownPast, ownFuture] = await Promise.all([
        turn("alice", "Hello there"),
        turn("alice", "Hello there"),
        turn("alice", "Hello there", "brief"),
        turn("alice", "Hello there", "brief"),
        turn("alice", "Hello there"),
        turn("alice", "Hello there"),
      ]);
      await idleSince(old.conversationId, 40);
      await idleSince(recent.conversationId, 5);
      await idleSince(briefOld.conversationId, 3);
      await idleSince(briefNew.conversationId, 1);
      await call("alice", SET_EXPIRY, { id: ownPast.conversationId, at: new Date(Date.now() - 1000).toISOString() });
      await idleSince(ownFuture.conversationId, 40);
      await call("alice", SET_EXPIRY, { id: ownFuture.conversationId, at: new Date(Date.now() + DAY).toISOString() });
      // Run events: one run ended three days ago, another just now.
      await sql(`UPDATE runs SET finished_at = ? WHERE id = ?`, [new Date(Date.now() - 3 * DAY), recent.runId]);
      const eventsBefore = await app.storage.runEvents.byRuns([recent.runId, briefNew.runId]);
      expect(eventsBefore.get(recent.runId)!.length).toBeGreaterThan(0);
      expect(eventsBefore.get(briefNew.runId)!.length).toBeGreaterThan(0);

      const s = await sweeper({ RETENTION_CONVERSATION_DAYS: "30", RETENTION_EVENTS_DAYS: "1" });
      await until(
        async () => !(await exists(old.conversationId)) && !(await exists(briefOld.conversationId)) && !(await exists(ownPast.conversationId)),
        "the expired conversations deleted",
      );
      for (const kept of [recent, briefNew, ownFuture]) expect(await exists(kept.conversationId)).toBe(true);
      // Deleted as deleteConversation deletes: runs and the thread too.
      expect(await app.storage.runs.getRun(old.runId)).toBeNull();
      expect((await app.storage.checkpointReads.threads([old.conversationId])).get(old.conversationId)!.checkpoints).toEqual([]);
      await until(async () => (await app.storage.runEvents.byRuns([recent.runId])).get(recent.runId)!.length === 0, "the old run's events deleted");
      expect((await app.storage.runEvents.byRuns([briefNew.runId])).get(briefNew.runId)).toEqual(eventsBefore.get(briefNew.runId));

      // Counted once the sweep is over: what it deleted shows before it ends (it gives pages back last).
      const families = await until(async () => {
        const now = await metrics(s.url);
        return (sampleValue(now, "runledger_retention_sweeps_total", { outcome: "swept" }) ?? 0) > 0 && now;
      }, "the sweep counted");
      expect(sampleValue(families, "runledger_retention_deleted_rows_total", { table: "conversations" })).toBeGreaterThanOrEqual(3);
      expect(sampleValue(families, "runledger_retention_deleted_rows_total", { table: "run_events" })).toBe(eventsBefore.get(recent.runId)!.length);
      expect(sampleValue(families, "runledger_retention_sweeps_total", { outcome: "swept" })).toBeGreaterThan(0);
      expect((await readiness(s.url)).retention).toMatchObject({ state: "active", lastSweepAt: expect.any(String) });
      expect((await readiness(app.url)).retention.state).toBe("standby");
      await closeSweepers();
    });

    it("prunes checkpoints to runs' starts and ends, interrupts' and the latest: every run's checkpoints stay as they were less the pruned; fork, editState and resume still work", async () => {
      // Two tools turns (five checkpoints each), and a conversation whose runs wait for approval.
      const plain = await turn("alice", "Please calculate 17 * 3");
      await turn("alice", "Please calculate 6 * 7", "default", plain.conversationId);
      const careful = await turn("alice", "Please calculate 2 * 3", "careful");
      expect(careful.status).toBe("WAITING");
      const snapshot = async (conversationId: string) => {
        const { conversation } = await call("alice", CONVERSATION_CHECKPOINTS, { id: conversationId });
        const runs = await Promise.all(conversation.runs.edges.map(async (e: any) => (await call("alice", RUN_CHECKPOINTS, { id: e.node.id })).run));
        const owners = new Map(conversation.checkpoints.edges.map((e: any) => [e.node.id, e.node.run?.id ?? null]));
        return { runs, owners };
      };
      const before = [await snapshot(plain.conversationId), await snapshot(careful.conversationId)];

      await sweeper({ RETENTION_CHECKPOINTS_KEEP: "1" });
      for (const id of [plain.conversationId, careful.conversationId]) {
        await until(async () => (await app.storage.retention.prunableCheckpoints(id, 1, 10)).length === 0, "the thread pruned");
      }
      await closeSweepers();
      const after = [await snapshot(plain.conversationId), await snapshot(careful.conversationId)];

      let pruned = 0;
      for (const [i, was] of before.entries()) {
        const now = after[i]!;
        expect(now.runs.map((r: any) => r.id)).toEqual(was.runs.map((r: any) => r.id));
        for (const [j, run] of was.runs.entries()) {
          const kept = new Set(now.runs[j].checkpoints.map((c: any) => c.id));
          // What remains is what was there, in the same order; its last checkpoint (where it ended or waits) is kept.
          expect(now.runs[j].checkpoints).toEqual(run.checkpoints.filter((c: any) => kept.has(c.id)));
          expect(kept.has(run.checkpoints.at(-1).id)).toBe(true);
          pruned += run.checkpoints.length - kept.size;
        }
        // A remaining checkpoint keeps its run; a pruned one is absent.
        for (const [id, run] of now.owners) expect(was.owners.get(id)).toBe(run);
      }
      expect(pruned).toBeGreaterThanOrEqual(5);

      // Fork from the first run's end, whose ancestors were pruned.
      const firstEnd = before[0]!.runs[0].checkpoints.at(-1).id;
      const { forkConversation } = await call(
        "alice",
        `mutation($id: ID!) { forkConversation(input: { checkpointId: $id }) { __typename ... on ForkConversationSuccess { conversation { id messageCount messages { content } } } } }`,
        { id: firstEnd },
      );
      expect(forkConversation.__typename).toBe("ForkConversationSuccess");
      expect(forkConversation.conversation.messages.map((m: any) => m.content).at(-1)).toBe("The result is 51.");
      // Edit a kept checkpoint: a new branch from it.
      const { editState } = await call(
        "alice",
        `mutation($k: ID!) { editState(input: { checkpointId: $k, values: { messages: [{ role: "USER", content: "and 2 + 2?" }] } }) { __typename ... on EditStateSuccess { run { status } } } }`,
        { k: firstEnd },
      );
      expect(editState).toEqual({ __typename: "EditStateSuccess", run: { status: "COMPLETED" } });
      // Answer the interrupt the careful run waits on.
      const { conversation } = await call("alice", `query($id: ID!) { conversation(id: $id) { pendingInterrupts { id value } } }`, {
        id: careful.conversationId,
      });
      const [asked] = conversation.pendingInterrupts;
      const value = { toolCalls: asked.value.toolCalls.map((c: any) => ({ id: c.id, decision: "approve" })) };
      const { resumeRun } = await call(
        "alice",
        `mutation($id: ID!, $r: [InterruptResponseInput!]) { resumeRun(input: { conversationId: $id, responses: $r }) { __typename ... on ResumeRunSuccess { run { id } } } }`,
        { id: careful.conversationId, r: [{ interruptId: asked.id, value }] },
      );
      expect(resumeRun.__typename).toBe("ResumeRunSuccess");
      expect((await waitForRun(app.url, resumeRun.run.id)).status).toBe("COMPLETED");
    });

    it("sweeps on one instance at a time: the other stands by until the lease is let go", async () => {
      const [a, b] = [await sweeper({}), await sweeper({})];
      await sleep(600);
      const states = [(await readiness(a.url)).retention.state, (await readiness(b.url)).retention.state];
      expect([...states].sort()).toEqual(["active", "standby"]);
      const [active, standby] = states[0] === "active" ? [a!, b!] : [b!, a!];
      expect(sampleValue(await metrics(standby.url), "runledger_retention_sweeps_total", { outcome: "swept" }) ?? 0).toBe(0);
      expect(sampleValue(await metrics(standby.url), "runledger_retention_sweeps_total", { outcome: "standby" })).toBeGreaterThan(0);
      sweepers.splice(sweepers.indexOf(active), 1);
      await active.close();
      await until(async () => (await readiness(standby.url)).retention.state === "active", "the other instance sweeping");
      await closeSweepers();
    });

    it("npm run retention -- --dry-run prints what would go and deletes nothing; without it, deletes", async () => {
      const idle = await turn("alice", "Hello there");
      await idleSince(idle.conversationId, 40);
      const cli = (...args: string[]) =>
        exec("npm", ["run", "-s", "retention", "--", ...args], {
          cwd: ROOT,
          env: {
            ...process.env,
            DATABASE_URL: env.DATABASE_URL!,
            RUNLEDGER_CONFIG: env.RUNLEDGER_CONFIG!,
            RETENTION_CONVERSATION_DAYS: "30",
            LOG_LEVEL: "silent",
          },
          timeout: 60_000,
        });
      const dry = await cli("--dry-run");
      expect(dry.stdout).toContain("would delete (dry run, nothing deleted):");
      expect(dry.stdout).toMatch(/conversations\s+[1-9]/);
      expect(await exists(idle.conversationId)).toBe(true);
      const real = await cli();
      expect(real.stdout).toMatch(/deleted:\n\s+conversations\s+[1-9]/);
      expect(await exists(idle.conversationId)).toBe(false);
    }, 120_000);
  });
}
