// The outside scenario: an outside reviewer's method, reproduced. Four
// processes besides the harness: the fake model (the specs' fake Ollama in a
// process of its own, testkit/fake-ollama-main.ts), runledger as
// `npm start` runs it, LangGraph's own server (`langgraph dev`, peer.ts) and a
// client (client.ts) that reads the floor (ChatOllama straight from the fake
// model), runledger (graphql-ws) and the peer (its SDK) in turn, repetition by
// repetition. Every number is "added": above the floor measured in the same
// repetitions. See README.md in this folder.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { scalar, type Row } from "../lib/report.ts";
import type { Scenario, ScenarioOptions } from "../scenarios/scenario.ts";
import type { BatchResult, Request, Response, RunResult, System } from "./client.ts";
import { installPeer, PEER_SDK, ROOT, startPeer, type PeerServer } from "./peer.ts";
import { MiB, treeCpuMs, treeRss, type TreeRss } from "./proc.ts";
import { mainProfile } from "../lib/profile.ts";
import { summarizeWindow } from "./profile-window.ts";
import { node22 as prepareNode22, type Node22 } from "../../testkit/built.ts";
import type { StreamPlan } from "../../testkit/fake-ollama.ts";
import { startFakeOllamaProcess } from "../../testkit/processes.ts";

/** A stream of `tokens` tokens, one every `intervalMs`, the first one interval after the request. */
const every = (tokens: number, intervalMs: number): StreamPlan => ({ tokens, intervalMs, firstDelayMs: intervalMs });
/** The reviewer's stream: 200 tokens, one every 10 ms. */
const STREAM = every(200, 10);
/** Time to first token needs only the first few. */
const SHORT = every(5, 10);
const CONCURRENT = 50;
const MEMORY_RUNS = 200;
const SYSTEMS: System[] = ["floor", "runledger", "peer"];
const RESULTS_DIR = path.join(ROOT, "bench", "results");
const PROFILE_DIR = path.join(RESULTS_DIR, "profiles", "outside-runledger");

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

// ---- child processes ---------------------------------------------------------

interface Proc {
  child: ChildProcess;
  pid: number;
  tail(): string;
  stop(): Promise<void>;
}

/** A Node process; `node` and `cwd` default to the harness's own binary and the project. */
function spawnNode(args: string[], env: Record<string, string>, ipc = false, node = process.execPath, cwd = ROOT): Proc {
  const child = spawn(node, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ipc ? ["ignore", "pipe", "pipe", "ipc"] : ["ignore", "pipe", "pipe"],
  });
  let tail = "";
  const keep = (d: Buffer) => (tail = (tail + d.toString()).slice(-20_000));
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  process.once("exit", () => child.kill("SIGKILL"));
  return {
    child,
    pid: child.pid!,
    tail: () => tail,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Resolves with the first line of the child's output that is JSON and passes `match`. */
function jsonLine<T>(proc: Proc, match: (value: any) => boolean, timeoutMs = 60_000): Promise<T> {
  return new Promise((resolve, reject) => {
    let buffer = "";
    const timer = setTimeout(() => reject(new Error(`no start-up line within ${timeoutMs} ms:\n${proc.tail()}`)), timeoutMs);
    const onData = (d: Buffer) => {
      buffer += d;
      const lines = buffer.split("\n");
      buffer = lines.pop()!;
      for (const line of lines) {
        try {
          const value = JSON.parse(line);
          if (!match(value)) continue;
          clearTimeout(timer);
          return resolve(value as T);
        } catch {
          // not JSON
        }
      }
    };
    proc.child.stdout!.on("data", onData);
    proc.child.stderr!.on("data", onData);
    proc.child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before starting:\n${proc.tail()}`));
    });
  });
}

/** The fake model in a process of its own, so that its CPU is read apart from the others' and its timers keep their schedule. */
function startModel() {
  return startFakeOllamaProcess({ killAfterMs: 20_000 });
}

let built = false;
function buildOnce(): void {
  if (!built) execFileSync(process.execPath, ["scripts/build.mjs"], { stdio: "ignore" });
  built = true;
}

/**
 * runledger as production runs it: `npm run build`, then `node dist/main.js`, port
 * 0, a fresh database, info logs. Under --cpu-prof, src/main.ts under tsx instead,
 * so the profile names source files. On Node 22 (`node22`), the build from the
 * folder testkit/built.ts prepares for it (better-sqlite3 compiled for that
 * Node), profiled as built.
 */
async function startRunledger(modelUrl: string, dir: string, cpuProfile: boolean, node22: Node22 | null): Promise<Proc & { url: string }> {
  const args: string[] = [];
  if (cpuProfile) {
    fs.rmSync(PROFILE_DIR, { recursive: true, force: true });
    fs.mkdirSync(PROFILE_DIR, { recursive: true });
    args.push("--cpu-prof", "--cpu-prof-dir", PROFILE_DIR);
  }
  if (node22) args.push(path.join(node22.app, "dist", "main.js"));
  else if (cpuProfile) args.push("--import", "tsx", "src/main.ts");
  else {
    buildOnce();
    args.push("dist/main.js");
  }
  const proc = spawnNode(
    args,
    {
      PORT: "0",
      HOST: "127.0.0.1",
      DATABASE_URL: `file:${path.join(dir, "runledger.db")}`,
      OLLAMA_HOST: modelUrl,
      LOG_LEVEL: "info",
      // As for LangGraph's server beside it: no model queue, the fake model serves any number of chats at once,
      // and every run is admitted at once however late the loop runs.
      MODEL_CONCURRENCY: "10000",
      MAX_ACTIVE_RUNS: "10000",
      ADMISSION_LOOP_DELAY_MS: "0",
    },
    false,
    node22?.node,
    node22?.app,
  );
  const { url } = await jsonLine<{ url: string }>(proc, (v) => v.msg === "runledger listening");
  return Object.assign(proc, { url: url.replace(/\/graphql$/, "") });
}

class ClientProcess {
  private next = 0;
  private pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  constructor(readonly proc: Proc) {
    proc.child.on("message", (m: Response) => {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.ok) p?.resolve(m.result);
      else p?.reject(new Error(`client: ${m.error}`));
    });
    proc.child.once("exit", (code) => {
      for (const p of this.pending.values()) p.reject(new Error(`client exited with ${code}:\n${proc.tail()}`));
    });
  }
  ask<T>(request: Request): Promise<T> {
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.proc.child.send({ id, request });
    });
  }
}

// ---- statistics ---------------------------------------------------------------

/** Nearest-rank percentile. */
function pct(values: number[], p: number): number {
  if (!values.length) return NaN;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

const ttftOf = (r: RunResult) => (r.firstAt === null ? NaN : r.firstAt - r.requestAt);
const f2 = (v: number) => (Number.isFinite(v) ? v.toFixed(2) : "n/a");
const signed = (v: number) => (Number.isFinite(v) ? `${v >= 0 ? "+" : "−"}${Math.abs(v).toFixed(2)}` : "n/a");

// ---- the scenario ----------------------------------------------------------------

interface Tally {
  /** Per-token latencies, per system, pooled over repetitions. */
  tokens: Record<System, number[]>;
  /** Per-repetition p50 and p99, for the spread. */
  repP50: Record<System, number[]>;
  repP99: Record<System, number[]>;
  ttft: Record<System, number[]>;
  /** Latencies of tokens 0-4 of each run (run start) and of the rest (steady streaming). */
  early: Record<System, number[]>;
  steady: Record<System, number[]>;
  /** Request sent → the model received it (the stamp's requestAt), per run. */
  toModel: Record<System, number[]>;
  /** CPU of the client and the fake model over each system's steps, and the steps' wall time (ms). */
  clientCpuMs: Record<System, number>;
  modelCpuMs: Record<System, number>;
  wallMs: Record<System, number>;
  /** Server CPU (ms) and tokens relayed, summed over repetitions. */
  cpuMs: Record<"runledger" | "peer", number>;
  relayed: Record<"runledger" | "peer", number>;
  failures: Record<System, string[]>;
}

function tally(): Tally {
  const per = <T>(make: () => T) => ({ floor: make(), runledger: make(), peer: make() });
  return {
    tokens: per(() => []),
    repP50: per(() => []),
    repP99: per(() => []),
    ttft: per(() => []),
    early: per(() => []),
    steady: per(() => []),
    toModel: per(() => []),
    clientCpuMs: per(() => 0),
    modelCpuMs: per(() => 0),
    wallMs: per(() => 0),
    cpuMs: { runledger: 0, peer: 0 },
    relayed: { runledger: 0, peer: 0 },
    failures: per(() => []),
  };
}

/** The first tokens of a run: those the model sends while the run is still being set up behind it. */
const EARLY = 5;

function noteRun(t: Tally, system: System, r: RunResult) {
  if (r.error || r.received !== r.expected) t.failures[system].push(r.error ?? `${r.received}/${r.expected} tokens`);
  r.latencies.forEach((l, i) => (r.indexes[i]! < EARLY ? t.early : t.steady)[system].push(l));
  if (r.firstStamp) t.toModel[system].push(r.firstStamp.requestAt - r.requestAt);
}

/** The three systems in a different order each repetition, so none is always first after a pause or last before one. */
const order = (rep: number) => SYSTEMS.map((_, i) => SYSTEMS[(i + rep) % SYSTEMS.length]!);

export const outside: Scenario = {
  name: "outside",
  title: "The outside reviewer's method: runledger and LangGraph's own server above the ChatOllama floor",
  async run(options: ScenarioOptions) {
    const quick = options.quick;
    const tokenReps = options.reps ?? (quick ? 2 : 10);
    const ttftRuns = quick ? 10 : 60;
    const concurrentReps = options.reps ?? (quick ? 1 : 5);
    const memoryPlan = quick ? every(20, 10) : STREAM;
    const memoryBatch = quick ? 50 : 20;
    const log = options.log;
    const notes: string[] = [];
    const loads: string[] = [];

    const install = installPeer(log);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-outside-"));
    const procs: { stop(): Promise<unknown> }[] = [];
    let runledger: (Proc & { url: string }) | undefined;
    let peer: PeerServer | undefined;
    let window: { from: number; to: number; end: number } | undefined;

    const single = tally();
    const ttft = tally();
    const many = tally();
    const rss: Record<"runledger" | "peer", { idle?: TreeRss; after?: TreeRss; end?: TreeRss }> = { runledger: {}, peer: {} };
    const idleCpu: string[] = [];
    let skew = { skewMs: NaN, rttMs: NaN };
    let peerCommand = "";
    let node22: Node22 | null = null;
    /** The Node both servers run on; the floor, the client and the model run on the harness's. */
    let serverNode = process.version;

    const pidOf = (s: "runledger" | "peer") => (s === "runledger" ? runledger!.pid : peer!.pid);
    /** One step of `system`, with the server's CPU counted around it. */
    let clientPid = 0;
    let modelPid = 0;
    const measured = async <T>(t: Tally, system: System, step: () => Promise<T>, tokens: (v: T) => number): Promise<T> => {
      const server = system === "floor" ? 0 : treeCpuMs(pidOf(system));
      const client = treeCpuMs(clientPid);
      const model = treeCpuMs(modelPid);
      const started = performance.now();
      const value = await step();
      t.wallMs[system] += performance.now() - started;
      t.clientCpuMs[system] += treeCpuMs(clientPid) - client;
      t.modelCpuMs[system] += treeCpuMs(modelPid) - model;
      if (system !== "floor") {
        t.cpuMs[system] += treeCpuMs(pidOf(system)) - server;
        t.relayed[system] += tokens(value);
      }
      return value;
    };
    const idleCpuRate = async (label: string) => {
      const before = { runledger: treeCpuMs(pidOf("runledger")), peer: treeCpuMs(pidOf("peer")) };
      await sleep(5000);
      idleCpu.push(
        `${label}: runledger ${((treeCpuMs(pidOf("runledger")) - before.runledger) / 5).toFixed(1)} ms/s, peer ${((treeCpuMs(pidOf("peer")) - before.peer) / 5).toFixed(1)} ms/s`,
      );
    };

    try {
      const model = await startModel();
      procs.push(model);
      modelPid = model.pid;
      if (options.node22) {
        // The build first: the Node 22 folder takes a copy of dist/.
        buildOnce();
        log("  preparing Node 22 (downloaded and compiled for once, then reused)");
        node22 = await prepareNode22();
        serverNode = execFileSync(node22.node, ["--version"], { encoding: "utf8" }).trim();
      }
      runledger = await startRunledger(model.url, dir, options.cpuProfile, node22);
      procs.push(runledger);
      peer = await startPeer(model.url, node22?.node);
      procs.push(peer);
      peerCommand = peer.command;
      const clientProc = spawnNode(["--import", "tsx", "bench/outside/client.ts"], {}, true);
      procs.push(clientProc);
      clientPid = clientProc.pid;
      const client = new ClientProcess(clientProc);
      skew = await client.ask({ op: "init", modelUrl: model.url, runledgerUrl: runledger.url, peerUrl: peer.url, peerSdk: PEER_SDK });
      log(
        `  model ${model.url}, runledger ${runledger.url} (pid ${runledger.pid}), peer ${peer.url} (pid ${peer.pid}); clock skew client ↔ model ${(skew.skewMs * 1000).toFixed(0)} µs`,
      );

      // Idle: started, ready, nothing run yet.
      await idleCpuRate("idle after start");
      rss.runledger.idle = treeRss(runledger.pid);
      rss.peer.idle = treeRss(peer.pid);
      log(`  RSS idle: runledger ${(rss.runledger.idle.total / MiB).toFixed(1)} MiB, peer ${(rss.peer.idle.total / MiB).toFixed(1)} MiB (process tree)`);

      // 200 runs on each server, batch by batch in turn; they are the warm-up too.
      loads.push(`memory phase start ${load()}`);
      for (let done = 0; done < MEMORY_RUNS; done += memoryBatch) {
        for (const system of ["runledger", "peer"] as const) {
          const b = await client.ask<BatchResult>({ op: "batch", system, runs: Math.min(memoryBatch, MEMORY_RUNS - done), plan: memoryPlan });
          const failed = b.runs.filter((r) => r.error || r.received !== r.expected);
          if (failed.length)
            throw new Error(
              `${system}: ${failed.length} of ${b.runs.length} runs failed in the memory phase: ${failed[0]!.error ?? `${failed[0]!.received} tokens`}`,
            );
        }
      }
      await idleCpuRate(`idle after ${MEMORY_RUNS} runs`);
      rss.runledger.after = treeRss(runledger.pid);
      rss.peer.after = treeRss(peer.pid);
      log(
        `  RSS after ${MEMORY_RUNS} runs: runledger ${(rss.runledger.after.total / MiB).toFixed(1)} MiB, peer ${(rss.peer.after.total / MiB).toFixed(1)} MiB`,
      );
      for (let i = 0; i < 3; i++) await client.ask({ op: "one", system: "floor", plan: SHORT });

      // Added latency per token: one run at a time, 200 tokens at 10 ms.
      loads.push(`per-token phase start ${load()}`);
      for (let rep = 0; rep < tokenReps; rep++) {
        const line: string[] = [];
        for (const system of order(rep)) {
          const r = await measured(
            single,
            system,
            () => client.ask<RunResult>({ op: "one", system, plan: STREAM }),
            (v) => v.received,
          );
          noteRun(single, system, r);
          single.tokens[system].push(...r.latencies);
          single.repP50[system].push(pct(r.latencies, 50));
          single.repP99[system].push(pct(r.latencies, 99));
          line.push(`${system} ${f2(pct(r.latencies, 50))}/${f2(pct(r.latencies, 99))}`);
        }
        log(`  1 run, rep ${rep + 1}/${tokenReps}, token latency p50/p99 ms: ${line.join(", ")}`);
      }

      // Added time to first token: sequential runs, interleaved run by run.
      loads.push(`TTFT phase start ${load()}`);
      for (let i = 0; i < ttftRuns; i++) {
        for (const system of order(i)) {
          const r = await measured(
            ttft,
            system,
            () => client.ask<RunResult>({ op: "one", system, plan: SHORT }),
            (v) => v.received,
          );
          noteRun(ttft, system, r);
          ttft.ttft[system].push(ttftOf(r));
        }
      }
      log(
        `  TTFT p50/p95 ms over ${ttftRuns} sequential runs: ${SYSTEMS.map((s) => `${s} ${f2(pct(ttft.ttft[s], 50))}/${f2(pct(ttft.ttft[s], 95))}`).join(", ")}`,
      );

      // 50 concurrent runs.
      loads.push(`concurrent phase start ${load()}`);
      for (let rep = 0; rep < concurrentReps; rep++) {
        const line: string[] = [];
        for (const system of order(rep)) {
          const b = await measured(
            many,
            system,
            () => client.ask<BatchResult>({ op: "batch", system, runs: CONCURRENT, plan: STREAM }),
            (v) => v.runs.reduce((n, r) => n + r.received, 0),
          );
          for (const r of b.runs) {
            noteRun(many, system, r);
            many.tokens[system].push(...r.latencies);
            many.ttft[system].push(ttftOf(r));
          }
          const lat = b.runs.flatMap((r) => r.latencies);
          many.repP50[system].push(pct(lat, 50));
          many.repP99[system].push(pct(lat, 99));
          if (system === "runledger" && rep === 0) window = { from: b.startMono, to: b.firstTokensMono, end: b.endMono };
          line.push(`${system} TTFT p50 ${f2(pct(b.runs.map(ttftOf), 50))}, token p99 ${f2(pct(lat, 99))}`);
        }
        log(`  ${CONCURRENT} runs, rep ${rep + 1}/${concurrentReps}: ${line.join("; ")}`);
      }
      loads.push(`end ${load()}`);
      rss.runledger.end = treeRss(runledger.pid);
      rss.peer.end = treeRss(peer.pid);
    } finally {
      for (const p of procs.reverse()) await p.stop().catch(() => {});
      fs.rmSync(dir, { recursive: true, force: true });
    }

    // ---- rows ----------------------------------------------------------------------
    const rows: Row[] = [];
    const peerLabel = "LangGraph dev server (peer)";
    const add = (metric: string, caseName: string, unit: string, ours: number, theirs: number, target?: { text: string; met: boolean }, rowNotes?: string[]) =>
      rows.push({
        scenario: "outside",
        case: caseName,
        metric,
        runledger: scalar(unit, [ours]),
        baseline: { label: peerLabel, measure: scalar(unit, [theirs]) },
        target,
        notes: rowNotes,
      });
    const added = (t: Tally, system: System, p: number) => pct(t.tokens[system], p) - pct(t.tokens.floor, p);
    const spread = (t: Tally, key: "repP50" | "repP99", system: System) => {
      const d = t[key][system].map((v, i) => v - t[key].floor[i]!);
      return `${Math.min(...d).toFixed(2)} to ${Math.max(...d).toFixed(2)}`;
    };
    const fails = (t: Tally) => {
      const out = SYSTEMS.filter((s) => t.failures[s].length).map((s) => `${s}: ${t.failures[s].length} run(s) incomplete (${t.failures[s][0]})`);
      return out.length ? out : undefined;
    };

    const oneCase = `1 run × ${STREAM.tokens} tokens at ${STREAM.intervalMs} ms`;
    const busy = (t: Tally) =>
      `CPU use while each system ran (of one core): ${SYSTEMS.map((s) => `${s}: client ${((100 * t.clientCpuMs[s]) / t.wallMs[s]).toFixed(0)}%, fake model ${((100 * t.modelCpuMs[s]) / t.wallMs[s]).toFixed(0)}%`).join("; ")}`;
    const tokenNotes = (t: Tally, key: "repP50" | "repP99") => [
      `floor ${f2(pct(t.tokens.floor, key === "repP50" ? 50 : 99))} ms, runledger ${f2(pct(t.tokens.runledger, key === "repP50" ? 50 : 99))} ms, peer ${f2(pct(t.tokens.peer, key === "repP50" ? 50 : 99))} ms, pooled over ${t.tokens.floor.length} / ${t.tokens.runledger.length} / ${t.tokens.peer.length} tokens`,
      `added per repetition (paired with that repetition's floor): runledger ${spread(t, key, "runledger")} ms, peer ${spread(t, key, "peer")} ms`,
      `where the tail is, p50 / p99 of tokens 0-${EARLY - 1} of each run (the run is still starting) and of the rest: ${SYSTEMS.map(
        (s) => `${s} ${f2(pct(t.early[s], 50))} / ${f2(pct(t.early[s], 99))} and ${f2(pct(t.steady[s], 50))} / ${f2(pct(t.steady[s], 99))} ms`,
      ).join("; ")}`,
      ...(key === "repP99" ? [busy(t)] : []),
      ...(fails(t) ?? []),
    ];
    const a50 = added(single, "runledger", 50);
    const a99 = added(single, "runledger", 99);
    add("added latency per token, p50", oneCase, "ms", a50, added(single, "peer", 50), { text: "≤ +0.5 ms", met: a50 <= 0.5 }, tokenNotes(single, "repP50"));
    add("added latency per token, p99", oneCase, "ms", a99, added(single, "peer", 99), { text: "≤ +2 ms", met: a99 <= 2 }, tokenNotes(single, "repP99"));

    const ttftAdded = (s: System) => pct(ttft.ttft[s], 95) - pct(ttft.ttft.floor, 95);
    add(
      "added time to first token, p95",
      `${ttftRuns} sequential runs × ${SHORT.tokens} tokens`,
      "ms",
      ttftAdded("runledger"),
      ttftAdded("peer"),
      { text: "≤ +10 ms", met: ttftAdded("runledger") <= 10 },
      [
        `TTFT p50 / p95: ${SYSTEMS.map((s) => `${s} ${f2(pct(ttft.ttft[s], 50))} / ${f2(pct(ttft.ttft[s], 95))} ms`).join(", ")}`,
        `of which request sent → model request, p50 / p95: ${SYSTEMS.map((s) => `${s} ${f2(pct(ttft.toModel[s], 50))} / ${f2(pct(ttft.toModel[s], 95))} ms`).join(", ")}`,
        `server CPU per run (${SHORT.tokens} tokens): runledger ${(ttft.cpuMs.runledger / ttftRuns).toFixed(1)} ms, peer ${(ttft.cpuMs.peer / ttftRuns).toFixed(1)} ms`,
        ...(fails(ttft) ?? []),
      ],
    );

    const manyCase = `${CONCURRENT} concurrent runs × ${STREAM.tokens} tokens at ${STREAM.intervalMs} ms`;
    const manyTtft = (s: System) => pct(many.ttft[s], 50) - pct(many.ttft.floor, 50);
    add("added time to first token, p50", manyCase, "ms", manyTtft("runledger"), manyTtft("peer"), { text: "≤ +150 ms", met: manyTtft("runledger") <= 150 }, [
      `TTFT p50 / p95: ${SYSTEMS.map((s) => `${s} ${f2(pct(many.ttft[s], 50))} / ${f2(pct(many.ttft[s], 95))} ms`).join(", ")}`,
      `of which request sent → model request, p50 / p95: ${SYSTEMS.map((s) => `${s} ${f2(pct(many.toModel[s], 50))} / ${f2(pct(many.toModel[s], 95))} ms`).join(", ")}`,
      busy(many),
      ...(fails(many) ?? []),
    ]);
    const m99 = added(many, "runledger", 99);
    add("added latency per token, p99", manyCase, "ms", m99, added(many, "peer", 99), { text: "≤ +5 ms", met: m99 <= 5 }, tokenNotes(many, "repP99"));

    const cpu = (t: Tally, s: "runledger" | "peer") => t.cpuMs[s] / t.relayed[s];
    for (const [t, caseName] of [
      [single, oneCase],
      [many, manyCase],
    ] as const) {
      add(
        "server CPU per relayed token (run start and end included)",
        caseName,
        "ms",
        cpu(t, "runledger"),
        cpu(t, "peer"),
        { text: "≤ half the peer's", met: cpu(t, "runledger") <= cpu(t, "peer") / 2 },
        [
          `server process tree, /proc utime + stime: runledger ${t.cpuMs.runledger.toFixed(0)} ms for ${t.relayed.runledger} tokens, peer ${t.cpuMs.peer.toFixed(0)} ms for ${t.relayed.peer} tokens`,
        ],
      );
    }

    const parts = (r?: TreeRss) => (r ? r.parts.map((p) => `${p.name} ${(p.bytes / MiB).toFixed(1)}`).join(" + ") : "n/a");
    const mib = (r?: TreeRss) => (r ? r.total / MiB : NaN);
    add(
      "server RSS, idle (process tree)",
      "after start, before any run",
      "MiB",
      mib(rss.runledger.idle),
      mib(rss.peer.idle),
      { text: "≤ 100 MiB", met: mib(rss.runledger.idle) <= 100 },
      [`runledger: ${parts(rss.runledger.idle)} MiB; peer: ${parts(rss.peer.idle)} MiB`],
    );
    add(
      "server RSS, after 200 runs (process tree)",
      `${MEMORY_RUNS} runs × ${memoryPlan.tokens} tokens, ${memoryBatch} at a time, then 5 s idle`,
      "MiB",
      mib(rss.runledger.after),
      mib(rss.peer.after),
      { text: "≤ 150 MiB", met: mib(rss.runledger.after) <= 150 },
      [
        `runledger: ${parts(rss.runledger.after)} MiB; peer: ${parts(rss.peer.after)} MiB`,
        `at the end of the scenario: runledger ${mib(rss.runledger.end).toFixed(1)} MiB, peer ${mib(rss.peer.end).toFixed(1)} MiB`,
      ],
    );

    notes.push(
      `peer: ${peerCommand.replace(/--port \d+|--studio-url \S+/g, (m) => m.split(" ")[0] + " …")}, @langchain/langgraph-cli ${install.cliVersion}, tokens through runs.stream streamMode "messages-tuple" (SSE)`,
      `servers (runledger, the peer) on Node ${serverNode}; the harness, the client (and so the floor) and the fake model on Node ${process.version}`,
      `client ↔ model clock skew ${(skew.skewMs * 1000).toFixed(0)} µs`,
      `server CPU while idle: ${idleCpu.join("; ")}`,
      `load average (1/5/15 min): ${loads.join("; ")}`,
      `added = system − floor (ChatOllama in the client process), percentiles pooled over every repetition; systems interleaved repetition by repetition (${tokenReps} × 1 run, ${ttftRuns} sequential short runs, ${concurrentReps} × ${CONCURRENT} runs)`,
    );
    if (options.cpuProfile) notes.push("runledger ran under --cpu-prof in this run: its numbers include the profiler's overhead");

    // Where runledger's CPU went while the first measured batch of 50 runs started.
    if (options.cpuProfile && window) {
      // The bounds stay beside the profile, so it can be summarized again.
      fs.writeFileSync(path.join(PROFILE_DIR, "window.json"), `${JSON.stringify(window)}\n`);
      const file = mainProfile(PROFILE_DIR);
      if (file) {
        const start = summarizeWindow(file, window.from, window.to);
        const whole = summarizeWindow(file, window.from, window.end, 10);
        const text = `Run start of ${CONCURRENT} concurrent runs (first request sent → last run's first token):\n${start}\n\nThe whole batch (to the last run's end):\n${whole}\n`;
        fs.writeFileSync(path.join(PROFILE_DIR, "run-start.txt"), text);
        log(text);
        notes.push(`CPU profile of runledger's run start: ${path.relative(ROOT, path.join(PROFILE_DIR, "run-start.txt"))}`);
      }
    }

    // The three-way table, beside the shared results.
    const table = [
      `# outside scenario, ${new Date().toISOString()} (${quick ? "quick" : "full"}${options.cpuProfile ? ", runledger under --cpu-prof" : ""})`,
      "",
      `Machine: ${os.cpus().length} × ${os.cpus()[0]?.model.trim()}, servers on Node ${serverNode}, harness and client on Node ${process.version}. Peer: ${peerCommand.split(" --host")[0]}.`,
      "",
      "| measure | case | peer | runledger | target | met |",
      "| --- | --- | --- | --- | --- | --- |",
      ...rows.map((r) => {
        const unit = r.runledger.unit;
        const fmt = (v: number) => (metricIsAdded(r.metric) ? signed(v) : f2(v));
        const theirs = r.baseline!.measure.kind === "scalar" ? r.baseline!.measure.median : NaN;
        const ours = r.runledger.kind === "scalar" ? r.runledger.median : NaN;
        return `| ${r.metric} | ${r.case} | ${fmt(theirs)} ${unit} | ${fmt(ours)} ${unit} | ${r.target?.text ?? ""} | ${r.target ? (r.target.met ? "yes" : "**no**") : ""} |`;
      }),
      "",
      ...notes.map((n) => `- ${n}`),
      ...rows.flatMap((r) => (r.notes ?? []).map((n) => `- ${r.metric}, ${r.case}: ${n}`)),
      "",
    ].join("\n");
    fs.mkdirSync(RESULTS_DIR, { recursive: true });
    fs.writeFileSync(path.join(RESULTS_DIR, `outside-${quick ? "quick" : "full"}.md`), table);
    log(table);
    return { rows, notes };
  },
};

const metricIsAdded = (metric: string) => metric.startsWith("added");
