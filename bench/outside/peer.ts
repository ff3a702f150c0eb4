// The peer: LangGraph's own JS agent server (`langgraph dev` from
// @langchain/langgraph-cli 1.5.1, its in-memory API server, no Docker), serving
// the same two-node agent (peer/agent.ts). It is never a runledger dependency:
// on first use it is installed into bench/.peer, a folder of its own with its
// own package.json and lockfile (peer/), from the npm registry alone, and the
// folder ignores itself in git. Later runs find the install and reuse it.
//
//   npm run bench -- --only outside        installs on first use
//   node --import tsx bench/outside/peer.ts    only installs (or says it is installed)
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(HERE, "../..");
export const PEER_DIR = path.join(ROOT, "bench", ".peer");
const SOURCE = path.join(HERE, "peer");
const CLI = path.join(PEER_DIR, "node_modules", "@langchain", "langgraph-cli", "dist", "cli", "cli.mjs");
export const PEER_SDK = path.join(PEER_DIR, "node_modules", "@langchain", "langgraph-sdk", "dist", "index.js");
const STAMP = path.join(PEER_DIR, ".installed");

/** The environment for anything the peer runs: no npm_* variables of an enclosing `npm run`, and nothing that phones home. */
function peerEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("npm_")) env[k] = v;
  return {
    ...env,
    // The CLI posts usage analytics to a remote host unless this is set.
    LANGGRAPH_CLI_NO_ANALYTICS: "1",
    // No LangSmith tracing (it would post every run to a remote host).
    LANGSMITH_TRACING: "false",
    LANGCHAIN_TRACING_V2: "false",
    // Never open a browser on the Studio page.
    BROWSER: "none",
    ...extra,
  };
}

function fingerprint(): string {
  const hash = createHash("sha256");
  for (const f of ["package.json", "package-lock.json"]) hash.update(fs.readFileSync(path.join(SOURCE, f)));
  return hash.digest("hex").slice(0, 16);
}

function du(dir: string): number {
  let bytes = 0;
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) bytes += fs.statSync(p).size;
    }
  };
  walk(dir);
  return bytes;
}

export interface InstallReport {
  installed: boolean;
  seconds?: number;
  bytes: number;
  cliVersion: string;
}

/**
 * Installs the peer into bench/.peer unless the same package.json and lockfile
 * are installed there already, and refreshes its graph and langgraph.json
 * either way. Prints what it does.
 */
export function installPeer(log: (message: string) => void = (m) => process.stderr.write(`${m}\n`)): InstallReport {
  fs.mkdirSync(PEER_DIR, { recursive: true });
  // The folder ignores itself: nothing the peer writes there (its install, its .langgraph_api state) is ever committed.
  fs.writeFileSync(path.join(PEER_DIR, ".gitignore"), "*\n");
  const want = fingerprint();
  let installed = false;
  let seconds: number | undefined;
  const have = fs.existsSync(STAMP) && fs.existsSync(CLI) ? fs.readFileSync(STAMP, "utf8").trim() : "";
  if (have === want) {
    log(`peer: @langchain/langgraph-cli already installed in ${path.relative(ROOT, PEER_DIR)} (lockfile ${want})`);
  } else {
    log(`peer: installing @langchain/langgraph-cli 1.5.1 and the agent's packages into ${path.relative(ROOT, PEER_DIR)} (npm ci, npm registry only) ...`);
    for (const f of ["package.json", "package-lock.json"]) fs.copyFileSync(path.join(SOURCE, f), path.join(PEER_DIR, f));
    const started = performance.now();
    const result = spawnSync("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], {
      cwd: PEER_DIR,
      env: peerEnv(),
      stdio: ["ignore", "inherit", "inherit"],
    });
    if (result.status !== 0) throw new Error(`npm ci for the peer failed (exit ${result.status ?? result.signal})`);
    seconds = (performance.now() - started) / 1000;
    fs.writeFileSync(STAMP, `${want}\n`);
    installed = true;
  }
  for (const f of ["agent.ts", "langgraph.json"]) fs.copyFileSync(path.join(SOURCE, f), path.join(PEER_DIR, f));
  const bytes = du(path.join(PEER_DIR, "node_modules"));
  const cliVersion = (JSON.parse(fs.readFileSync(path.join(path.dirname(CLI), "..", "..", "package.json"), "utf8")) as { version: string }).version;
  if (installed) log(`peer: installed in ${seconds!.toFixed(1)} s, node_modules ${(bytes / 2 ** 20).toFixed(0)} MiB, CLI ${cliVersion}`);
  return { installed, seconds, bytes, cliVersion };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export interface PeerServer {
  url: string;
  /** The `langgraph dev` launcher: the root of the server's process tree. */
  pid: number;
  /** How it was started, for the notes. */
  command: string;
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts `langgraph dev` as its docs show, on a port of our choosing, with 50
 * queue workers (-n; the default is 10), no browser, and no file watcher
 * (--no-reload: a benchmark changes no code, and the watcher would be one more
 * process in the tree). Its in-memory state starts empty every time. `node` is
 * the binary it runs on.
 */
export async function startPeer(modelUrl: string, node = process.execPath): Promise<PeerServer> {
  fs.rmSync(path.join(PEER_DIR, ".langgraph_api"), { recursive: true, force: true });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const args = [CLI, "dev", "--no-browser", "--no-reload", "--n-jobs-per-worker", "50", "--host", "127.0.0.1", "--port", String(port), "--studio-url", url];
  const child: ChildProcess = spawn(node, args, {
    cwd: PEER_DIR,
    // Its own process group, so stopping it reaches the launcher's children too.
    detached: true,
    env: peerEnv({ OLLAMA_HOST: modelUrl, OLLAMA_MODEL: "qwen3" }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  // Keep only the tail: the dev server logs every request.
  let tail = "";
  const keep = (d: Buffer) => {
    tail = (tail + d.toString()).slice(-20_000);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const pid = child.pid!;
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-pid, signal);
    } catch {
      // already gone
    }
  };
  process.once("exit", () => killGroup("SIGKILL"));
  const stop = async () => {
    killGroup("SIGTERM");
    const timer = setTimeout(() => killGroup("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
    // The launcher may exit before its children: make sure none is left.
    await new Promise((r) => setTimeout(r, 200));
    killGroup("SIGKILL");
  };
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`langgraph dev exited with ${child.exitCode}:\n${tail}`);
    try {
      const response = await fetch(`${url}/ok`);
      await response.arrayBuffer();
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`langgraph dev not ready after 120 s:\n${tail}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, pid, command: `langgraph dev ${args.slice(2).join(" ")}`, output: () => tail, stop };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) installPeer();
