#!/usr/bin/env node
// Installs and starts the servers the tests need: a throwaway PostgreSQL and
// Redis on free loopback ports in a temporary folder, and Chromium for browser
// tests. Plain Node ESM with no dependencies, so it runs before anything is
// compiled or installed; the vitest global setup (test/setup/services.ts) and
// testkit/services.ts import it, people run it:
//
//   node scripts/services.mjs install [postgres] [redis] [chromium]
//   node scripts/services.mjs start [--dir DIR]   prints {"dir","postgresUrl","redisUrl"}
//   node scripts/services.mjs stop --dir DIR
//
// Missing programs come from Debian's packages (apt-get, as root). Every
// failure is one line on stderr and a non-zero exit code.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const SELF = fileURLToPath(import.meta.url);

/** A failure whose message is one line that says what went wrong. */
export class ServiceError extends Error {
  constructor(message) {
    super(oneLine(message));
    this.name = "ServiceError";
  }
}

function oneLine(text) {
  return String(text)
    .trim()
    .split(/\s*\n\s*/)
    .filter(Boolean)
    .join("; ");
}

/** Flags Chromium needs on these machines: headless, no sandbox (root), no calls home. */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

// ---------------------------------------------------------------------------
// Finding the programs

function isExecutable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function which(name) {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, name))) return path.join(dir, name);
  }
  return null;
}

/** The folder holding PostgreSQL's initdb, pg_ctl and postgres, or null. */
export function findPostgresBin() {
  const candidates = [];
  const onPath = which("initdb");
  if (onPath) candidates.push(path.dirname(fs.realpathSync(onPath)));
  const debian = "/usr/lib/postgresql";
  if (fs.existsSync(debian)) {
    const versions = fs
      .readdirSync(debian)
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    for (const v of versions) candidates.push(path.join(debian, v, "bin"));
  }
  return candidates.find((dir) => ["initdb", "pg_ctl", "postgres"].every((p) => isExecutable(path.join(dir, p)))) ?? null;
}

/** The redis-server binary, or null. */
export function findRedisServer() {
  return which("redis-server") ?? (isExecutable("/usr/bin/redis-server") ? "/usr/bin/redis-server" : null);
}

/** The Chromium binary (CHROMIUM_PATH, Debian's /usr/bin/chromium, or on PATH), or null. */
export function findChromium() {
  const fromEnv = process.env.CHROMIUM_PATH;
  if (fromEnv) return isExecutable(fromEnv) ? fromEnv : null;
  if (isExecutable("/usr/bin/chromium")) return "/usr/bin/chromium";
  return which("chromium") ?? which("chromium-browser");
}

const SERVICES = {
  postgres: { find: findPostgresBin, pkg: "postgresql-15", what: "PostgreSQL (initdb)" },
  redis: { find: findRedisServer, pkg: "redis-server", what: "redis-server" },
  chromium: { find: findChromium, pkg: "chromium", what: "Chromium" },
};
export const SERVICE_NAMES = Object.keys(SERVICES);

function missing(names) {
  return names.filter((name) => !SERVICES[name].find());
}

// ---------------------------------------------------------------------------
// Small helpers

const sleepCell = new Int32Array(new SharedArrayBuffer(4));
function sleepSync(ms) {
  Atomics.wait(sleepCell, 0, 0, ms);
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether process `pid` runs. A zombie does not: the servers daemonize, so init reaps them, and it may take its time. */
function isAlive(pid) {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if (error.code !== "EPERM") return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return !fs.existsSync("/proc/self/stat"); // gone meanwhile; or no /proc here, so trust kill()
  }
}

const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0;

/** Runs a command to its exit; resolves with its code and its stdout and stderr together. */
function run(command, args, options = {}) {
  return new Promise((resolve) => {
    let output = "";
    let child;
    try {
      child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], ...options });
    } catch (error) {
      resolve({ code: 127, output: String(error.message) });
      return;
    }
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("error", (error) => resolve({ code: 127, output: `${command}: ${error.message}` }));
    // Output may still be arriving at "exit", but a daemon started by the
    // command may hold our pipes open for good: wait for "close" a moment only.
    child.on("exit", (code, signal) => {
      const done = () => resolve({ code: code ?? 128, signal, output });
      const timer = setTimeout(done, 500);
      child.on("close", () => {
        clearTimeout(timer);
        done();
      });
    });
  });
}

function lastLines(text, count = 2) {
  return text
    .trim()
    .split("\n")
    .filter((l) => l.trim())
    .slice(-count)
    .join("; ");
}

/** A program's error lines (or its last lines when none says error). */
function errorLines(text) {
  const errors = text.split("\n").filter((l) => /error|fatal|panic/i.test(l));
  return errors.length ? errors.slice(0, 2).join("; ") : lastLines(text);
}

function writeJson(file, value) {
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, JSON.stringify(value));
  fs.renameSync(temporary, file);
}

function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"));
  } catch {
    return null;
  }
}

/** Runs fn while holding a lock file that names this process; a dead holder's lock is taken over. */
export async function withLock(lockFile, fn, { timeoutMs = 15 * 60_000 } = {}) {
  const deadline = Date.now() + timeoutMs;
  const mine = `${lockFile}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  fs.writeFileSync(mine, String(process.pid));
  try {
    for (;;) {
      try {
        fs.linkSync(mine, lockFile); // atomic: fails if the lock exists
        break;
      } catch (error) {
        if (error.code !== "EEXIST") throw new ServiceError(`cannot take lock ${lockFile}: ${error.message}`);
      }
      const holder = readPidFile(lockFile);
      if (holder === null && !fs.existsSync(lockFile)) continue; // released meanwhile
      if (holder !== null && !isAlive(holder)) {
        // Left by a process that died holding it: take it over (checking once more that it is the same).
        if (readPidFile(lockFile) === holder) fs.rmSync(lockFile, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new ServiceError(`timed out waiting for lock ${lockFile} (held by process ${holder})`);
      await sleep(100);
    }
  } finally {
    fs.rmSync(mine, { force: true });
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(lockFile, { force: true });
  }
}

// ---------------------------------------------------------------------------
// install

const INSTALL_LOCK = path.join(os.tmpdir(), "runledger-services-install.lock");

// apt-get's words when its package lists are missing or older than the mirror.
const LISTS_PROBLEM = /Unable to locate package|has no installation candidate|is not available|Unable to fetch some archives|Failed to fetch|404\s+Not Found/i;

function aptGet(args) {
  return run("apt-get", ["-q", "-o", "DPkg::Lock::Timeout=300", ...args], {
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
}

function aptError(output) {
  const errors = output.split("\n").filter((l) => l.startsWith("E: "));
  return errors.length ? errors.slice(0, 2).join("; ") : lastLines(output);
}

/**
 * Installs from Debian's packages whatever of `names` (postgres, redis,
 * chromium; all when empty) is missing. Needs root when something is missing.
 * Concurrent callers (parallel test workers) take turns; the later ones find it installed.
 */
export async function install(names = [], { log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  if (names.length === 0) names = SERVICE_NAMES;
  for (const name of names) if (!SERVICES[name]) throw new ServiceError(`unknown service "${name}": choose from ${SERVICE_NAMES.join(", ")}`);
  if (missing(names).length === 0) return [];
  const packagesOf = (list) => list.map((name) => SERVICES[name].pkg);
  if (!isRoot() || !which("apt-get")) {
    const pkgs = packagesOf(missing(names)).join(" ");
    const whatMissing = missing(names)
      .map((name) => SERVICES[name].what)
      .join(", ");
    const why = !isRoot() ? "installing needs root" : "apt-get is not available here";
    throw new ServiceError(
      `${whatMissing} not installed and ${why}: install Debian's ${pkgs} (apt-get install -y --no-install-recommends ${pkgs}), or run "node scripts/services.mjs install" as root`,
    );
  }
  return withLock(INSTALL_LOCK, async () => {
    const todo = missing(names); // another process may have installed them meanwhile
    if (todo.length === 0) return [];
    const pkgs = packagesOf(todo);
    const installArgs = ["install", "-y", "--no-install-recommends", ...pkgs];
    const began = Date.now();
    log(`services: installing ${pkgs.join(" ")} from Debian's packages`);
    let result = await aptGet(installArgs);
    if (result.code !== 0 && LISTS_PROBLEM.test(result.output)) {
      log(`services: apt-get's package lists lack ${pkgs.join(" ")} or are out of date (${aptError(result.output)}): running apt-get update`);
      const update = await aptGet(["update"]);
      if (update.code !== 0) log(`services: apt-get update: ${aptError(update.output)}`);
      result = await aptGet(installArgs);
    }
    if (result.code !== 0) throw new ServiceError(`apt-get install ${pkgs.join(" ")} failed: ${aptError(result.output)}`);
    const still = missing(todo);
    if (still.length) throw new ServiceError(`apt-get installed ${pkgs.join(" ")} but ${still.map((n) => SERVICES[n].what).join(", ")} is still not found`);
    log(`services: installed ${pkgs.join(" ")} in ${((Date.now() - began) / 1000).toFixed(1)} s`);
    return pkgs;
  });
}

// ---------------------------------------------------------------------------
// start and stop

const MARKER = ".runledger-services";

/** A free TCP port on 127.0.0.1 (free now; a server should bind it soon). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Makes (or takes, when empty) the folder the servers live in, marked as ours. */
export function prepareDir(dir) {
  if (!dir) {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-services-"));
  } else {
    dir = path.resolve(dir);
    if (fs.existsSync(dir) && !fs.statSync(dir).isDirectory()) throw new ServiceError(`${dir} exists and is not a folder`);
    fs.mkdirSync(dir, { recursive: true });
    const entries = fs.readdirSync(dir);
    if (entries.length) throw new ServiceError(`${dir} is not empty: give a new or empty folder`);
  }
  fs.writeFileSync(path.join(dir, MARKER), "servers started by scripts/services.mjs; `node scripts/services.mjs stop --dir` removes this folder\n");
  fs.chmodSync(dir, 0o755); // the postgres user must reach DIR/pg
  return dir;
}

function assertOurs(dir) {
  if (!fs.existsSync(path.join(dir, MARKER))) throw new ServiceError(`${dir} is not a services folder (no ${MARKER} in it)`);
}

function idOf(user, flag) {
  const result = spawnSync("id", [flag, user], { encoding: "utf8" });
  return result.status === 0 ? Number(result.stdout.trim()) : null;
}

/** As root, PostgreSQL runs as the system user postgres (created when missing). */
function postgresUser() {
  if (!isRoot()) return null;
  if (idOf("postgres", "-u") === null) {
    const made = spawnSync("useradd", ["--system", "--user-group", "--no-create-home", "postgres"], { encoding: "utf8" });
    if (made.status !== 0) throw new ServiceError(`useradd postgres failed: ${lastLines(made.stderr || made.stdout || "")}`);
  }
  return { name: "postgres", uid: idOf("postgres", "-u"), gid: idOf("postgres", "-g") };
}

function asUser(user, command, args) {
  return user ? run("runuser", ["-u", user.name, "--", command, ...args]) : run(command, args);
}

/**
 * Starts PostgreSQL in DIR/pg, on `port` when given (else a free one; another
 * if that is taken meanwhile); resolves once it accepts connections. Writes DIR/postgres.json.
 */
export async function startPostgres(dir, { port: wanted } = {}) {
  assertOurs(dir);
  const bin = findPostgresBin();
  if (!bin) throw new ServiceError("PostgreSQL's initdb not found: run node scripts/services.mjs install postgres");
  const user = postgresUser();
  const data = path.join(dir, "pg");
  const log = path.join(dir, "postgres.log");
  fs.mkdirSync(data, { mode: 0o700 });
  fs.writeFileSync(log, "");
  if (user) {
    fs.chownSync(data, user.uid, user.gid);
    fs.chownSync(log, user.uid, user.gid);
  }
  const init = await asUser(user, path.join(bin, "initdb"), ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"]);
  if (init.code !== 0) {
    const hint =
      user && /Permission denied/.test(init.output)
        ? ` (PostgreSQL runs as the user postgres, who cannot reach ${data}: choose a folder under ${os.tmpdir()})`
        : "";
    throw new ServiceError(`initdb failed: ${errorLines(init.output)}${hint}`);
  }
  const conf = path.join(data, "postgresql.conf");
  fs.appendFileSync(
    conf,
    [
      "",
      "# test server: loopback TCP only, no durability",
      "listen_addresses = '127.0.0.1'",
      "unix_socket_directories = ''",
      "fsync = off",
      "synchronous_commit = off",
      "full_page_writes = off",
      "max_connections = 300",
      "",
    ].join("\n"),
  );
  for (let attempt = 1; ; attempt++) {
    const port = (attempt === 1 && wanted) || (await freePort());
    fs.appendFileSync(conf, `port = ${port}\n`); // the last setting wins
    const started = await asUser(user, path.join(bin, "pg_ctl"), ["-D", data, "-l", log, "-w", "-t", "60", "start"]);
    if (started.code === 0) {
      const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
      writeJson(path.join(dir, "postgres.json"), { url, port, pid: postmasterPid(dir) });
      return { url, port };
    }
    const serverLog = fs.readFileSync(log, "utf8");
    if (attempt < 3 && /Address already in use|could not bind/i.test(serverLog)) continue; // the port was taken meanwhile
    throw new ServiceError(`PostgreSQL did not start: ${errorLines(serverLog || started.output)}`);
  }
}

function postmasterPid(dir) {
  try {
    return Number(fs.readFileSync(path.join(dir, "pg", "postmaster.pid"), "utf8").split("\n")[0]) || null;
  } catch {
    return null;
  }
}

function redisPing(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    let reply = "";
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.on("error", () => done(false));
    socket.on("connect", () => socket.write("PING\r\n"));
    socket.on("data", (chunk) => {
      reply += chunk;
      if (reply.includes("\r\n")) done(reply.startsWith("+PONG"));
    });
  });
}

/** Starts Redis in DIR, on `port` when given (as startPostgres); resolves once it answers PING. Writes DIR/redis.json. */
export async function startRedis(dir, { port: wanted, databases = 1024 } = {}) {
  assertOurs(dir);
  const server = findRedisServer();
  if (!server) throw new ServiceError("redis-server not found: run node scripts/services.mjs install redis");
  const log = path.join(dir, "redis.log");
  const pidFile = path.join(dir, "redis.pid");
  for (let attempt = 1; ; attempt++) {
    const port = (attempt === 1 && wanted) || (await freePort());
    const args = ["--daemonize", "yes", "--bind", "127.0.0.1", "--port", String(port), "--save", "", "--appendonly", "no"];
    args.push("--databases", String(databases), "--pidfile", pidFile, "--dir", dir, "--logfile", log);
    const started = await run(server, args);
    if (started.code !== 0) throw new ServiceError(`redis-server did not start: ${lastLines(started.output)}`);
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (await redisPing(port)) {
        const url = `redis://127.0.0.1:${port}`;
        writeJson(path.join(dir, "redis.json"), { url, port, pid: Number(fs.readFileSync(pidFile, "utf8")) || null });
        return { url, port };
      }
      await sleep(20);
    }
    const serverLog = fs.existsSync(log) ? fs.readFileSync(log, "utf8") : "";
    stopPid(readPidFile(pidFile), "SIGTERM");
    if (attempt < 3 && /Address already in use/i.test(serverLog)) continue;
    throw new ServiceError(`redis-server did not answer on port ${port} within 10 s: ${lastLines(serverLog) || "no log"}`);
  }
}

function readPidFile(file) {
  try {
    return Number(fs.readFileSync(file, "utf8").trim()) || null;
  } catch {
    return null;
  }
}

function stopPid(pid, signal) {
  if (!pid) return;
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

/**
 * The running server of `kind` (postgres, redis) in DIR, started if it is not
 * running yet: installed first when `install` is true, otherwise null when its
 * program is missing. Concurrent callers (test workers) take turns through a
 * lock in DIR, so the server starts once: a caller that finds another one
 * starting it waits for it (the lock is taken before the first await).
 */
export async function ensureServer(dir, kind, { install: mayInstall = true, log, port } = {}) {
  const state = path.join(dir, `${kind}.json`);
  const known = readJson(state);
  if (known) return known;
  assertOurs(dir);
  return withLock(path.join(dir, `${kind}.lock`), async () => {
    const again = readJson(state);
    if (again) return again;
    if (!SERVICES[kind].find()) {
      if (!mayInstall) return null;
      await install([kind], { log });
    }
    assertOurs(dir); // the run may have ended during a long install
    return kind === "postgres" ? startPostgres(dir, { port }) : startRedis(dir, { port });
  });
}

/** Installs what is missing, then starts PostgreSQL and Redis in DIR (a new temporary folder by default). */
export async function start({ dir, log } = {}) {
  await install(["postgres", "redis"], { log });
  dir = prepareDir(dir);
  try {
    const [postgres, redis] = await Promise.allSettled([startPostgres(dir), startRedis(dir)]);
    if (postgres.status === "rejected") throw postgres.reason;
    if (redis.status === "rejected") throw redis.reason;
    return { dir, postgresUrl: postgres.value.url, redisUrl: redis.value.url };
  } catch (error) {
    stop(dir);
    throw error;
  }
}

/**
 * Stops the servers in DIR (PostgreSQL's fast shutdown, Redis's SIGTERM), waits
 * for them to exit, and removes DIR. Synchronous, so it also works in an exit
 * handler. Does nothing when DIR is already gone.
 */
export function stop(dir, { timeoutMs = 10_000 } = {}) {
  if (!fs.existsSync(dir)) return;
  assertOurs(dir);
  const pids = [
    [postmasterPid(dir), "SIGINT"], // PostgreSQL's fast shutdown
    [readPidFile(path.join(dir, "redis.pid")), "SIGTERM"],
  ].filter(([pid]) => pid);
  for (const [pid, signal] of pids) stopPid(pid, signal);
  const deadline = Date.now() + timeoutMs;
  while (pids.some(([pid]) => isAlive(pid)) && Date.now() < deadline) sleepSync(10);
  for (const [pid] of pids) stopPid(pid, "SIGKILL"); // still there after the timeout
  while (pids.some(([pid]) => isAlive(pid)) && Date.now() < deadline + 2000) sleepSync(10);
  fs.rmSync(dir, { recursive: true, force: true });
}

/**
 * Starts a detached process that stops the servers in DIR and removes it once
 * process `pid` is gone, however it ended (even by SIGKILL). It exits by itself
 * when DIR is removed. Returns its pid.
 */
export function spawnWatchdog(dir, pid = process.pid) {
  const child = spawn(process.execPath, [SELF, "watch", "--dir", dir, "--pid", String(pid)], { detached: true, stdio: "ignore" });
  child.unref();
  return child.pid;
}

function watch(dir, pid) {
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => {});
  const timer = setInterval(() => {
    if (!fs.existsSync(path.join(dir, MARKER))) process.exit(0);
    if (!isAlive(pid)) {
      clearInterval(timer);
      try {
        stop(dir);
      } finally {
        process.exit(0);
      }
    }
  }, 200);
}

// ---------------------------------------------------------------------------
// Command line

function parseArgs(argv) {
  const names = [];
  const options = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--dir" || arg === "--pid") {
      const value = argv[++i];
      if (!value) throw new ServiceError(`${arg} needs a value`);
      options[arg.slice(2)] = value;
    } else if (arg.startsWith("--dir=")) {
      options.dir = arg.slice("--dir=".length);
    } else if (arg.startsWith("-")) {
      throw new ServiceError(`unknown option ${arg}`);
    } else {
      names.push(arg);
    }
  }
  return { names, options };
}

const USAGE = "usage: node scripts/services.mjs install [postgres] [redis] [chromium] | start [--dir DIR] | stop --dir DIR";

async function main(argv) {
  const [command, ...rest] = argv;
  const { names, options } = parseArgs(rest);
  switch (command) {
    case "install": {
      await install(names);
      const where = (names.length ? names : SERVICE_NAMES).map((name) => `${name}: ${SERVICES[name].find()}`);
      process.stderr.write(`services: ${where.join(", ")}\n`);
      return;
    }
    case "start": {
      if (names.length) throw new ServiceError(`start takes no names (it starts postgres and redis); ${USAGE}`);
      const started = await start({ dir: options.dir });
      process.stdout.write(`${JSON.stringify(started)}\n`);
      return;
    }
    case "stop":
      if (!options.dir) throw new ServiceError(`stop needs --dir DIR; ${USAGE}`);
      if (!fs.existsSync(options.dir)) throw new ServiceError(`${options.dir} does not exist`);
      stop(path.resolve(options.dir));
      return;
    case "watch":
      watch(path.resolve(options.dir), Number(options.pid));
      return;
    default:
      throw new ServiceError(command ? `unknown command "${command}"; ${USAGE}` : USAGE);
  }
}

if (process.argv[1] && fs.realpathSync(process.argv[1]) === SELF) {
  main(process.argv.slice(2)).then(
    () => {
      // Exit now: nothing of ours is left to wait for, and the daemons must not keep us.
      if (process.argv[2] !== "watch") process.exit(0);
    },
    (error) => {
      process.stderr.write(`services: ${error instanceof ServiceError ? error.message : oneLine(error?.message ?? error)}\n`);
      process.exit(1);
    },
  );
}
