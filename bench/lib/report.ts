// Results: one row per measured case, beside its baseline from the same run,
// kept in bench/results/latest.json and rendered as a Markdown table.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { median, medianOfReps, type Percentiles } from "./stats.ts";
import { ROOT } from "../../testkit/processes.ts";

export const RESULTS_DIR = path.join(ROOT, "bench", "results");

/** A distribution (latencies) or a single number (requests/s, bytes), each per repetition. */
export type Measure =
  | { kind: "dist"; unit: string; reps: Percentiles[]; median: Percentiles }
  | { kind: "scalar"; unit: string; reps: number[]; median: number; higherIsBetter?: boolean };

export interface Row {
  scenario: string;
  case: string;
  metric: string;
  runledger: Measure;
  baseline?: { label: string; measure: Measure };
  target?: { text: string; met: boolean };
  notes?: string[];
}

export interface ScenarioResult {
  scenario: string;
  measuredAt: string;
  mode: string;
  seconds: number;
  machine: Machine;
  rows: Row[];
  notes: string[];
}

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  platform: string;
  /** 1-minute load average at the start and end of the scenario: how quiet the machine was. */
  loadAvg: [number, number];
}

export function machine(loadAtStart: number): Machine {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    cpuModel: cpus[0]?.model.trim() ?? "unknown",
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    loadAvg: [round(loadAtStart, 2), round(os.loadavg()[0]!, 2)],
  };
}

export function dist(unit: string, reps: Percentiles[]): Measure {
  return { kind: "dist", unit, reps, median: medianOfReps(reps) };
}

export function scalar(unit: string, reps: number[], higherIsBetter = false): Measure {
  return { kind: "scalar", unit, reps, median: median(reps), higherIsBetter };
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** Numbers for the tables: three significant digits, thousands separated. */
export function fmt(value: number): string {
  if (!Number.isFinite(value)) return "n/a";
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString("en-US");
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

export function measureCell(m: Measure): string {
  if (m.kind === "scalar") return `${fmt(m.median)} ${m.unit}`;
  return `${fmt(m.median.p50)} / ${fmt(m.median.p95)} / ${fmt(m.median.p99)} ${m.unit}`;
}

function addedCell(row: Row): string {
  const base = row.baseline?.measure;
  const ours = row.runledger;
  if (!base) return "";
  if (ours.kind === "dist" && base.kind === "dist") {
    const d = (a: number, b: number) => `${a - b >= 0 ? "+" : "−"}${fmt(Math.abs(a - b))}`;
    return `${d(ours.median.p50, base.median.p50)} / ${d(ours.median.p95, base.median.p95)} / ${d(ours.median.p99, base.median.p99)}`;
  }
  if (ours.kind === "scalar" && base.kind === "scalar") return `${ours.median - base.median >= 0 ? "+" : "−"}${fmt(Math.abs(ours.median - base.median))}`;
  return "";
}

function ratioCell(row: Row): string {
  const base = row.baseline?.measure;
  const ours = row.runledger;
  if (!base) return "";
  const r = (a: number, b: number) => (b === 0 ? "n/a" : `${fmt(a / b)}×`);
  if (ours.kind === "dist" && base.kind === "dist") return `${r(ours.median.p50, base.median.p50)} / ${r(ours.median.p99, base.median.p99)}`;
  if (ours.kind === "scalar" && base.kind === "scalar") return r(ours.median, base.median);
  return "";
}

export function markdownTable(results: ScenarioResult[]): string {
  const lines = [
    "| scenario | case | metric | runledger (p50 / p95 / p99) | baseline | baseline value | added | ratio (p50 / p99) | target | met |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const result of results) {
    for (const row of result.rows) {
      const base = row.baseline;
      lines.push(
        `| ${row.scenario} | ${row.case} | ${row.metric} | ${measureCell(row.runledger)} | ${base?.label ?? ""} | ${base ? measureCell(base.measure) : ""} | ${addedCell(row)} | ${ratioCell(row)} | ${row.target?.text ?? ""} | ${row.target ? (row.target.met ? "yes" : "**no**") : ""} |`,
      );
    }
  }
  return lines.join("\n");
}

export function markdownReport(results: ScenarioResult[]): string {
  const m = results[0]?.machine;
  const header = m ? `Machine: ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB, Node ${m.node}, ${m.platform}.` : "";
  const perScenario = results.map(
    (r) =>
      `- ${r.scenario}: ${r.measuredAt}, ${r.mode}, ${Math.round(r.seconds)} s, load average ${r.machine.loadAvg[0]} → ${r.machine.loadAvg[1]}${r.notes.length ? `; ${r.notes.join("; ")}` : ""}`,
  );
  const rowNotes = results.flatMap((r) => r.rows.flatMap((row) => (row.notes ?? []).map((n) => `- ${row.scenario} / ${row.case}: ${n}`)));
  return [
    header,
    "",
    "Percentiles are the median over repetitions of each repetition's p50, p95 and p99 (throughput rows: p50 / p97.5 / p99 of autocannon's latency, and requests/s).",
    "",
    markdownTable(results),
    "",
    "Runs:",
    ...perScenario,
    ...(rowNotes.length ? ["", "Notes:", ...rowNotes] : []),
    "",
  ].join("\n");
}

/** Merges fresh scenario results into latest.json (a scenario run alone replaces only its own rows) and rewrites latest.md. */
export function writeResults(fresh: ScenarioResult[], order: string[]): ScenarioResult[] {
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  const jsonFile = path.join(RESULTS_DIR, "latest.json");
  let previous: ScenarioResult[] = [];
  try {
    previous = (JSON.parse(fs.readFileSync(jsonFile, "utf8")) as { scenarios: ScenarioResult[] }).scenarios;
  } catch {
    // first run
  }
  const byName = new Map(previous.map((r) => [r.scenario, r]));
  for (const r of fresh) byName.set(r.scenario, r);
  const merged = [...byName.values()].sort((a, b) => order.indexOf(a.scenario) - order.indexOf(b.scenario));
  fs.writeFileSync(`${jsonFile}.tmp`, JSON.stringify({ scenarios: merged }, null, 2) + "\n");
  fs.renameSync(`${jsonFile}.tmp`, jsonFile);
  fs.writeFileSync(path.join(RESULTS_DIR, "latest.md"), markdownReport(merged));
  return merged;
}
