// `runledger retention [--dry-run]` (and `npm run retention --`): one retention
// sweep now, with the server's settings and agent file. A dry run reads only
// and prints what a sweep would delete; without it the sweep takes the
// retention lease like a server's sweeper (so it never sweeps beside one) and
// prints what it deleted.
import os from "node:os";
import { describeDatabase, loadConfig } from "../config.ts";
import { agentDefaultsFrom } from "../agent/definitions.ts";
import { loadAgentDefinitions } from "../agent/agent-file.ts";
import { createLogger } from "../logger.ts";
import { openStorage } from "../storage/index.ts";
import { expiryPolicy } from "../retention/policy.ts";
import { RetentionSweeper, type SweepReport } from "../retention/sweeper.ts";
import type { ExpiryPolicy } from "../storage/retention/types.ts";
import type { RetentionConfig } from "../config.ts";

export const RETENTION_USAGE = "usage: runledger retention [--dry-run]";

/** The tables a report lists, in the order a sweep visits them. */
const TABLES = ["conversations", "checkpoints", "writes", "checkpoint_writes", "checkpoint_blobs", "run_events", "tool_calls", "idempotency_keys"];

export async function runRetention(args: string[]): Promise<number> {
  const unknown = args.filter((a) => a !== "--dry-run");
  if (unknown.length > 0) {
    process.stderr.write(`runledger retention: unexpected ${unknown[0]}\n${RETENTION_USAGE}\n`);
    return 2;
  }
  const dryRun = args.includes("--dry-run");
  const config = loadConfig();
  const definitions = loadAgentDefinitions(config.agentsFile, agentDefaultsFrom(config));
  const policy = expiryPolicy(config.retention, definitions);
  const storage = await openStorage(config);
  try {
    const sweeper = new RetentionSweeper({
      store: storage.retention,
      runs: storage.runs,
      config: config.retention,
      policy,
      holder: `cli:${os.hostname()}:${process.pid}`,
      logger: createLogger("warn"),
    });
    process.stdout.write(`${describeDatabase(config)}\n${describePolicies(config.retention, policy)}\n`);
    const report = await sweeper.sweep({ dryRun });
    if (!report) {
      process.stderr.write("runledger retention: another instance holds the retention lease (it is sweeping); try again later\n");
      return 1;
    }
    await sweeper.stop();
    process.stdout.write(formatReport(report));
    return 0;
  } finally {
    await storage.close();
  }
}

export function describePolicies(config: RetentionConfig, policy: ExpiryPolicy): string {
  const agents = Object.entries(policy.agentDays).map(([name, days]) => `${name}: ${days}`);
  const conversations = config.conversationDays === null ? "kept unless their own expiresAt has passed" : `deleted after ${config.conversationDays} idle days`;
  return [
    `conversations: ${conversations}${agents.length ? ` (agents' own days: ${agents.join(", ")})` : ""}`,
    `checkpoints: ${config.checkpointsKeep === null ? "all kept" : `the latest ${config.checkpointsKeep} per thread kept, besides runs' start and end checkpoints`}`,
    `run events and tool journals: ${config.eventsDays === null ? "kept" : `deleted ${config.eventsDays} days after their run ended`}`,
    "idempotency keys: deleted once past their 24-hour TTL",
  ].join("\n");
}

export function formatReport(report: SweepReport): string {
  const rows = TABLES.filter((t) => t in report.deleted || ["conversations", "checkpoints", "run_events", "tool_calls", "idempotency_keys"].includes(t));
  const lines = rows.map((table) => `  ${table.padEnd(18)} ${report.deleted[table] ?? 0}`);
  const head = report.dryRun ? "would delete (dry run, nothing deleted):" : "deleted:";
  const tail = report.dryRun ? "" : `reclaimed ${report.reclaimedPages} pages; took ${Math.round(report.durationMs)} ms\n`;
  return `${head}\n${lines.join("\n")}\n${tail}`;
}
