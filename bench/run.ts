// `npm run bench`: runs the scenarios against a real runledger process and a
// fake model that stamps every token, then writes bench/results/latest.json and
// latest.md and prints the table.
//
//   npm run bench                       every scenario
//   npm run bench -- --only relay,ttft  some of them (the others keep their last results)
//   npm run bench -- --quick            short runs, to check the harness
//   npm run bench -- --reps 3           repetitions per scenario
//   npm run bench -- --cpu-prof         CPU profiles of the runledger processes, summarized
//   npm run bench -- --only outside --node22   the outside scenario with both servers on Node 22
//   npm run bench -- --readme           rewrite bench/README.md's Performance section from the results
//   npm run bench -- --only none --readme   only that, from the last results
import os from "node:os";
import { parseArgs } from "node:util";
import { machine, markdownReport, writeResults, type ScenarioResult } from "./lib/report.ts";
import { startFakeOllamaProcess } from "../testkit/processes.ts";
import { KILL_AFTER_MS } from "./lib/runledger.ts";
import { summarizeProfiles } from "./lib/profile.ts";
import { updateReadme } from "./lib/readme.ts";
import type { Scenario } from "./scenarios/scenario.ts";
import { relay } from "./scenarios/relay.ts";
import { ttft } from "./scenarios/ttft.ts";
import { fanout } from "./scenarios/fanout.ts";
import { correlation } from "./scenarios/correlation.ts";
import { throughput } from "./scenarios/throughput.ts";
import { concurrent } from "./scenarios/concurrent.ts";
import { cost } from "./scenarios/cost.ts";
import { multiInstance } from "./scenarios/multi-instance.ts";
import { auth } from "./scenarios/auth.ts";
import { burstScenario } from "./scenarios/burst.ts";
import { journal } from "./scenarios/journal.ts";
import { observability } from "./scenarios/observability.ts";
import { outside } from "./outside/scenario.ts";
import { sdk } from "./scenarios/sdk.ts";
import { retentionScenario } from "./scenarios/retention.ts";
import { crossing } from "./scenarios/crossing.ts";
import { runCpu } from "./scenarios/run-cpu.ts";

const SCENARIOS: Scenario[] = [
  relay,
  ttft,
  fanout,
  correlation,
  throughput,
  concurrent,
  cost,
  multiInstance,
  auth,
  burstScenario,
  journal,
  observability,
  outside,
  sdk,
  retentionScenario,
  crossing,
  runCpu,
];

const { values } = parseArgs({
  options: {
    only: { type: "string" },
    quick: { type: "boolean", default: false },
    reps: { type: "string" },
    "cpu-prof": { type: "boolean", default: false },
    node22: { type: "boolean", default: false },
    readme: { type: "boolean", default: false },
  },
});

const names = values.only === "none" ? [] : values.only ? values.only.split(",").map((s) => s.trim()) : SCENARIOS.map((s) => s.name);
const unknown = names.filter((n) => !SCENARIOS.some((s) => s.name === n));
if (unknown.length) {
  process.stderr.write(`unknown scenario(s): ${unknown.join(", ")}; choose from ${SCENARIOS.map((s) => s.name).join(", ")}\n`);
  process.exit(2);
}
if (values.node22 && names.some((n) => n !== "outside")) {
  process.stderr.write("--node22 runs the outside scenario's servers on Node 22; use it with --only outside\n");
  process.exit(2);
}
const reps = values.reps === undefined ? undefined : Number(values.reps);
if (reps !== undefined && !(Number.isInteger(reps) && reps > 0)) {
  process.stderr.write("--reps must be a positive whole number\n");
  process.exit(2);
}

const log = (message: string) => process.stderr.write(`${message}\n`);
const model = names.length ? await startFakeOllamaProcess({ killAfterMs: KILL_AFTER_MS }) : null;
const fresh: ScenarioResult[] = [];
const failed: string[] = [];
try {
  for (const scenario of SCENARIOS.filter((s) => names.includes(s.name))) {
    log(`${scenario.name}: ${scenario.title}`);
    const load = os.loadavg()[0]!;
    const started = performance.now();
    let output;
    try {
      output = await scenario.run({ modelUrl: model!.url, quick: values.quick!, reps, cpuProfile: values["cpu-prof"]!, node22: values.node22!, log });
    } catch (error) {
      // One broken scenario must not cost the others' numbers; its last results stay as they were.
      log(`${scenario.name} failed: ${(error as Error).stack ?? error}`);
      failed.push(scenario.name);
      continue;
    }
    fresh.push({
      scenario: scenario.name,
      measuredAt: new Date().toISOString(),
      mode: `${values.quick ? "quick" : "full"}${values.node22 ? ", Node 22" : ""}`,
      seconds: (performance.now() - started) / 1000,
      machine: machine(load),
      rows: output.rows,
      notes: output.notes,
    });
  }
} finally {
  await model?.stop();
}

const all = writeResults(
  fresh,
  SCENARIOS.map((s) => s.name),
);
if (values.readme) updateReadme(all);
process.stdout.write(markdownReport(fresh));
if (values["cpu-prof"]) process.stdout.write(`\n${summarizeProfiles(fresh.map((r) => r.scenario))}\n`);
if (failed.length) {
  process.stderr.write(`\nfailed: ${failed.join(", ")}\n`);
  process.exitCode = 1;
}
