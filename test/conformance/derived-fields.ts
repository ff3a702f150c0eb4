// One invariant for every deployment: wherever a run's outcome was recorded
// (completion, failure, cancel on this or another instance, shutdown, crash
// recovery, lease expiry), a conversation's derived fields say what a fresh read
// of its thread and its runs says. messageCount is the recorded outcome's count,
// so it is compared only once the conversation has no active run.
import { expect } from "vitest";
import { gqlOk } from "../../testkit/graphql.ts";
import { until } from "../../testkit/streaming.ts";

const TRUTH = /* GraphQL */ `
  query Truth($after: String) {
    conversations(first: 4, after: $after) {
      pageInfo { hasNextPage endCursor }
      edges { node {
        id messageCount updatedAt
        messages { role }
        activeRun { id }
        latestRun { id }
        runs(first: 20) { totalCount edges { node { id status queueReason startedAt finishedAt } } }
      } }
    }
  }
`;

interface TruthNode {
  id: string;
  messageCount: number;
  updatedAt: string;
  messages: { role: string }[];
  activeRun: { id: string } | null;
  latestRun: { id: string } | null;
  runs: { totalCount: number; edges: { node: { id: string; status: string; queueReason: string | null; startedAt: string; finishedAt: string | null } }[] };
}

async function readAll(url: string): Promise<TruthNode[]> {
  const all: TruthNode[] = [];
  let after: string | null = null;
  for (;;) {
    const { conversations }: any = await gqlOk(url, TRUTH, { after });
    all.push(...conversations.edges.map((e: any) => e.node));
    if (!conversations.pageInfo.hasNextPage) return all;
    after = conversations.pageInfo.endCursor;
  }
}

/** What is wrong with one conversation's derived fields; empty when they are true. */
export function derivedFieldProblems(c: TruthNode): string[] {
  const problems: string[] = [];
  const runs = c.runs.edges.map((e) => e.node);
  if (runs.length < c.runs.totalCount) return [`${c.runs.totalCount} runs: more than this check reads`];
  // Runs waiting behind the active one (ENQUEUE) are not active; the first of them is when nothing else is.
  const behind = runs.filter((r) => r.status === "QUEUED" && r.queueReason === "BEHIND_ACTIVE_RUN");
  const running = runs.filter((r) => (r.status === "RUNNING" || r.status === "QUEUED") && !behind.includes(r));
  if (running.length > 1) problems.push(`${running.length} running runs`);
  const active = running[0] ?? behind[0];
  if ((c.activeRun?.id ?? null) !== (active?.id ?? null)) problems.push(`activeRun ${c.activeRun?.id ?? null}, running ${active?.id ?? null}`);
  // Runs are listed oldest first (startedAt, then id): the latest is the last one.
  if ((c.latestRun?.id ?? null) !== (runs.at(-1)?.id ?? null)) problems.push(`latestRun ${c.latestRun?.id ?? null}, last started ${runs.at(-1)?.id ?? null}`);
  const lastActivity = Math.max(0, ...runs.flatMap((r) => [Date.parse(r.startedAt), r.finishedAt ? Date.parse(r.finishedAt) : 0]));
  if (Date.parse(c.updatedAt) < lastActivity) problems.push(`updatedAt ${c.updatedAt} is before its runs' last change ${new Date(lastActivity).toISOString()}`);
  if (running.length === 0 && c.messageCount !== c.messages.length) problems.push(`messageCount ${c.messageCount}, the thread holds ${c.messages.length}`);
  return problems;
}

/**
 * Checks every conversation of the deployment. Waits (bounded) for runs still
 * being recorded to settle, so the check reads what the outcomes left.
 */
export async function expectDerivedFieldsTrue(url: string, settled: () => boolean = () => true): Promise<void> {
  await until(settled, "the runs being recorded", 20_000).catch(() => undefined);
  const conversations = await readAll(url);
  const problems = conversations.flatMap((c) => derivedFieldProblems(c).map((p) => `conversation ${c.id}: ${p}`));
  expect(problems).toEqual([]);
}
