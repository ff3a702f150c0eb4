// The "Performance" section of bench/README.md, generated from the results so
// that the table there is always one the harness printed. (The project's
// README keeps a short summary and links to it.)
import fs from "node:fs";
import path from "node:path";
import { ROOT } from "../../testkit/processes.ts";
import { fmt, measureCell, type Row, type ScenarioResult } from "./report.ts";

const HEADING = "## Performance";
/** The reading of the table (causes, what is left and why): written by people, kept beside the harness, appended under the table. */
const ANALYSIS = path.join(ROOT, "bench", "analysis.md");

function analysis(): string[] {
  if (!fs.existsSync(ANALYSIS)) return [];
  return [...fs.readFileSync(ANALYSIS, "utf8").trimEnd().split("\n"), ""];
}

function ratio(row: Row): string {
  const base = row.baseline?.measure;
  const ours = row.runledger;
  if (!base) return "";
  if (ours.kind === "dist" && base.kind === "dist") return base.median.p50 ? `${fmt(ours.median.p50 / base.median.p50)}× (p50)` : "";
  if (ours.kind === "scalar" && base.kind === "scalar") return base.median ? `${fmt(ours.median / base.median)}×` : "";
  return "";
}

export function readmeSection(results: ScenarioResult[]): string {
  const machine = results[0]?.machine;
  const loads = results.flatMap((r) => r.machine.loadAvg);
  const busiest = loads.length ? Math.max(...loads) : 0;
  const dates = results.map((r) => r.measuredAt.slice(0, 10));
  const modes = new Set(results.map((r) => r.mode));
  const lines = [
    HEADING,
    "",
    "`npm run bench` starts runledger in a child process on a fresh SQLite file, as",
    "`npm start` does (for event-loop delay and SQL statement counts, through the same",
    "`startApp` with a probe), a fake Ollama that streams at a set rate and stamps each",
    "token with its send time, and real clients (graphql-ws, graphql-sse, fetch,",
    "autocannon). Every number stands beside a baseline measured in the same run: the",
    "same stream read directly by `ChatOllama`, a plain `ws`/SSE broadcast relay, a",
    "plain `node:http` server, bare graphql-yoga, or the naive one-query-per-row way.",
    "Latencies are the median over repetitions of each repetition's p50 / p95 / p99",
    "(throughput rows: p50 / p97.5 / p99). The multi-instance scenario also starts two",
    "instances on a real PostgreSQL and Redis (`scripts/services.mjs`) and compares",
    "them with the single SQLite instance.",
    "",
    "The `outside` scenario measures as an outsider would, beside LangGraph's own",
    "server: the built server (`node dist/main.js`), a fake model in a process of its",
    "own that stamps every token, a client in another process, and `langgraph dev`",
    "(`@langchain/langgraph-cli` 1.5.1, installed by the bench on first use into",
    "`bench/.peer`, not by `npm ci`) serving the same two-node agent; its rows' baseline",
    'is that peer, and "added" means above the same stream read by `ChatOllama` in the',
    "client process. `bench/outside/README.md` describes it.",
    "",
    "```sh",
    "npm run bench                          # every scenario, about eleven minutes",
    "npm run bench -- --only relay,fanout   # some: relay ttft fanout correlation throughput concurrent cost multi-instance auth journal outside retention run-cpu",
    "npm run bench -- --quick               # short runs, to check the harness",
    "npm run bench -- --cpu-prof            # also profile the server and summarize where its CPU went",
    "npm run bench -- --only outside --node22   # the outside scenario with both servers on Node 22",
    "npm run bench -- --readme              # then rewrite this section from bench/results/latest.json",
    "npm run bench -- --only none --readme  # only rewrite it, from the last results",
    "```",
    "",
    machine
      ? `Measured ${[...new Set(dates)].join(", ")} (${[...modes].join(" and ")} runs) on ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGiB} GiB, Node ${machine.node}, ${machine.platform}.`
      : "",
    machine
      ? busiest > machine.cpus
        ? `The machine was shared and busy while these ran (1-minute load average up to ${busiest} on ${machine.cpus} cores), so the latencies are provisional; CPU-time rows hold up better under load than wall-clock ones.`
        : `The 1-minute load average stayed between ${Math.min(...loads)} and ${busiest} on ${machine.cpus} cores while these ran, the harness and its clients included: they share the cores with the server.`
      : "",
    "Per-repetition values and notes: `bench/results/latest.json` and `bench/results/latest.md`.",
    "",
    "| scenario | case | metric | runledger | baseline | ratio | target | met |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ...results.flatMap((r) =>
      r.rows.map(
        (row) =>
          `| ${row.scenario} | ${row.case} | ${row.metric} | ${measureCell(row.runledger)} | ${row.baseline ? `${row.baseline.label}: ${measureCell(row.baseline.measure)}` : ""} | ${ratio(row)} | ${row.target?.text ?? ""} | ${row.target ? (row.target.met ? "yes" : "**no**") : ""} |`,
      ),
    ),
    "",
    ...analysis(),
  ];
  return lines.filter((l, i) => !(l === "" && lines[i - 1] === "")).join("\n");
}

/** The file whose Performance section the harness writes. */
export const BENCH_README = path.join(ROOT, "bench", "README.md");

/** Replaces bench/README.md's Performance section (from its heading to the next `## ` or the end), or appends it. */
export function updateReadme(results: ScenarioResult[], file = BENCH_README): void {
  const readme = fs.readFileSync(file, "utf8");
  const section = readmeSection(results);
  const start = readme.indexOf(`\n${HEADING}\n`);
  let next: string;
  if (start === -1) next = `${readme.trimEnd()}\n\n${section}`;
  else {
    const after = readme.indexOf("\n## ", start + HEADING.length + 1);
    next = `${readme.slice(0, start + 1)}${section}${after === -1 ? "" : `\n${readme.slice(after + 1)}`}`;
  }
  fs.writeFileSync(file, next);
}
