// A kill -9 soak with tool calls in flight. Each round starts runledger on the
// same database, brings every conversation to its end (a call in doubt is
// answered as a person who checks the bank would: skip when its payment is in
// the ledger, retry when it is not), starts new payments and kills the process
// with SIGKILL at a random moment: before a call, during it, after its outcome
// is recorded, after its checkpoint. At the end every payment is in the ledger
// exactly once: no effect doubled without an answer, nothing lost. The server
// is the production build (`node dist/main.js`), which starts in a fraction of
// the time the sources under tsx take, so the rounds cost what they test.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startFakeOllama, type FakeOllama, type FakeStep } from "../testkit/fake-ollama.ts";
import { PROCESS_TEST_TIMEOUT_MS, ROOT, tempDatabaseUrl, waitForRun } from "../testkit/app.ts";
import { buildServer, DIST_MAIN, startListening, type ProcessServer } from "../testkit/built.ts";
import { gqlOk } from "../testkit/graphql.ts";

// The suite runs 10 rounds, to stay within its time; `TOOLS_SOAK_ROUNDS=50 npx vitest run test/tools-soak.spec.ts` runs the full soak.
const ROUNDS = Number(process.env.TOOLS_SOAK_ROUNDS ?? 10);
const RUNS_PER_ROUND = 2;

let fake: FakeOllama;
const servers = new Set<ProcessServer>();

async function startServer(env: Record<string, string>): Promise<ProcessServer> {
  const server = await startListening(process.execPath, [DIST_MAIN], env);
  servers.add(server);
  void server.exited.then(() => servers.delete(server));
  return server;
}

beforeAll(async () => {
  await buildServer();
  fake = await startFakeOllama();
  fake.setResponder((request): FakeStep => {
    const last = request.messages.at(-1)!;
    if (last.role === "tool") return { kind: "text", tokens: ["Heard: ", last.content] };
    return { kind: "toolCalls", calls: [{ name: "pay", args: { invoice: last.content.split(" ")[1] } }] };
  });
}, PROCESS_TEST_TIMEOUT_MS);
afterAll(async () => {
  for (const server of servers) server.child.kill("SIGKILL");
  await fake?.close();
}, PROCESS_TEST_TIMEOUT_MS);

const START = /* GraphQL */ `
  mutation Start($message: String!, $conversationId: ID) {
    startRun(input: { message: $message, agent: "payer", conversationId: $conversationId }) { __typename ... on StartRunSuccess { run { id } conversation { id } } ... on Error { code message } }
  }
`;
const RESUME = /* GraphQL */ `
  mutation Resume($conversationId: ID!, $responses: [InterruptResponseInput!]) {
    resumeRun(input: { conversationId: $conversationId, responses: $responses }) {
      __typename ... on ResumeRunSuccess { run { id } } ... on Error { code message }
    }
  }
`;
const STATE = /* GraphQL */ `
  query State($id: ID!) {
    conversation(id: $id) {
      next
      activeRun { id }
      pendingInterrupts { id value }
      messages { role content }
    }
  }
`;

const lines = (file: string): any[] =>
  fs.existsSync(file)
    ? fs
        .readFileSync(file, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];

describe("a kill -9 soak with tool calls in flight", () => {
  it(
    `${ROUNDS} rounds: every payment made exactly once, every conversation completed`,
    async () => {
      const database = tempDatabaseUrl("runledger-tools-soak-");
      const ledger = path.join(database.dir, "ledger.jsonl");
      const log = path.join(database.dir, "bank.log");
      const bank = {
        command: process.execPath,
        args: [path.join(ROOT, "test", "fixtures", "mcp", "stdio-server.mjs")],
        env: { MCP_FIXTURE_LEDGER: ledger, MCP_FIXTURE_LOG: log, MCP_FIXTURE_PAY_DELAY_MS: "150" },
        tools: ["pay"],
      };
      const file = path.join(database.dir, "agents.json");
      fs.writeFileSync(file, JSON.stringify({ agents: { default: { type: "chat" }, payer: { type: "chat", tools: [], mcpServers: { bank } } } }));
      const env = { DATABASE_URL: database.url, OLLAMA_HOST: fake.url, RUNLEDGER_CONFIG: file };

      const paid = () => lines(ledger).filter((l) => l.tool === "pay");
      const conversations = new Map<string, string>(); // conversation id → invoice
      const answered = { retry: 0, skip: 0 };
      let resent = 0;

      /** Each call the bank started has finished (the bank outlives the process that asked). */
      const bankSettled = () =>
        vi.waitFor(() => expect(paid().length).toBe(lines(log).filter((e) => e.event === "started" && e.tool === "pay").length), { timeout: 10_000 });

      /** Resumes and answers until the conversation has nothing left to do. */
      async function finish(url: string, conversationId: string, invoice: string): Promise<void> {
        for (let step = 0; step < 10; step++) {
          const { conversation } = await gqlOk(url, STATE, { id: conversationId });
          if (conversation.activeRun) {
            await waitForRun(url, conversation.activeRun.id, 30_000);
            continue;
          }
          let responses: { interruptId: string; value: unknown }[] | undefined;
          if (conversation.pendingInterrupts.length) {
            responses = conversation.pendingInterrupts.map((i: any) => {
              expect(i.value.type).toBe("tool_in_doubt");
              // What a person checking the bank's records would say.
              const done = paid().some((l) => l.toolCallId === i.value.toolCallId);
              answered[done ? "skip" : "retry"] += 1;
              return { interruptId: i.id, value: done ? { decision: "skip", result: `paid ${i.value.args.invoice}` } : { decision: "retry" } };
            });
          } else if (conversation.next.length === 0) {
            if (conversation.messages.some((m: { role: string }) => m.role === "ASSISTANT")) return;
            // Killed before the message was stored (a run keeps only its stored steps): the thread
            // has nothing to resume, so the client sends the message again.
            resent += 1;
            const { startRun } = await gqlOk(url, START, { message: `pay ${invoice}`, conversationId });
            expect(startRun.__typename).toBe("StartRunSuccess");
            await waitForRun(url, startRun.run.id, 30_000);
            continue;
          }
          const { resumeRun } = await gqlOk(url, RESUME, { conversationId, responses });
          expect(resumeRun.__typename).toBe("ResumeRunSuccess");
          await waitForRun(url, resumeRun.run.id, 30_000);
        }
        throw new Error(`conversation ${conversationId} did not finish in 10 steps`);
      }

      for (let round = 0; round <= ROUNDS; round++) {
        const server = await startServer(env);
        await bankSettled();
        for (const [id, invoice] of conversations) await finish(server.url, id, invoice);
        if (round === ROUNDS) {
          server.child.kill("SIGTERM");
          expect(await server.exited).toBe(0);
          break;
        }
        for (let i = 0; i < RUNS_PER_ROUND; i++) {
          const invoice = `INV-${round}-${i}`;
          const { startRun } = await gqlOk(server.url, START, { message: `pay ${invoice}` });
          expect(startRun.__typename).toBe("StartRunSuccess");
          conversations.set(startRun.conversation.id, invoice);
        }
        // Anywhere from before the first call to after the last checkpoint.
        await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 600)));
        server.child.kill("SIGKILL");
        expect(await server.exited).toBe("SIGKILL");
      }

      // No payment made twice, none lost; each conversation heard of its payment.
      const invoices = [...conversations.values()];
      expect(invoices).toHaveLength(ROUNDS * RUNS_PER_ROUND);
      expect(
        paid()
          .map((l) => l.invoice)
          .sort(),
      ).toEqual([...invoices].sort());
      const last = await startServer(env);
      for (const [id, invoice] of conversations) {
        const { conversation } = await gqlOk(last.url, STATE, { id });
        expect(conversation.next).toEqual([]);
        expect(conversation.messages.at(-1)).toEqual({ role: "ASSISTANT", content: `Heard: paid ${invoice}` });
      }
      last.child.kill("SIGTERM");
      expect(await last.exited).toBe(0);
      console.log(
        `tools soak: ${ROUNDS} kills, ${invoices.length} payments, calls in doubt answered retry ${answered.retry}, skip ${answered.skip}; ${resent} messages killed before they were stored, sent again`,
      );
      database.remove();
    },
    PROCESS_TEST_TIMEOUT_MS * 12,
  );
});
