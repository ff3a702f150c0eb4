// The deployment files agree with the server they deploy: the Dockerfile,
// deploy/compose.yaml with deploy/.env.example, and the Helm chart in
// deploy/helm/runledger (rendered by testkit/helm-template.ts, helm's template
// language for the subset the chart uses). Every environment variable they set
// is one the server reads (src/config.ts, read here as text: one source of
// truth), and the settings they make load with the server's own loadConfig:
// the ports, probes and healthchecks meet what the server serves. The image
// itself is built and run by `npm run test:deploy` (test/deploy/).
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { isMap, parse, parseDocument, type Pair, type Scalar } from "yaml";
import { loadConfig } from "../src/config.ts";
import { ROOT } from "../testkit/app.ts";
import { renderChart, TemplateError, type Manifest } from "../testkit/helm-template.ts";

const read = (file: string) => fs.readFileSync(path.join(ROOT, file), "utf8");
const PACKAGE = JSON.parse(read("package.json")) as { version: string; bin: Record<string, string>; workspaces: string[] };

// ---------------------------------------------------------------------------
// The settings the server reads

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(file) : entry.name.endsWith(".ts") ? [file] : [];
  });
}

/** Every variable src/config.ts and src/config/ read (string literals naming a variable, env.NAME, env, "NAME"), and process.env.NAME anywhere in src/. */
const SETTINGS: Set<string> = (() => {
  const config = [read("src/config.ts"), ...sourceFiles(path.join(ROOT, "src", "config")).map((file) => fs.readFileSync(file, "utf8"))].join("\n");
  const names = new Set<string>();
  for (const m of config.matchAll(/"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)"/g)) names.add(m[1]!);
  for (const m of config.matchAll(/\benv(?:\.([A-Z][A-Z0-9_]*)|\[\s*"([A-Z][A-Z0-9_]*)"\s*\]|,\s*"([A-Z][A-Z0-9_]*)")/g)) names.add((m[1] ?? m[2] ?? m[3])!);
  for (const file of sourceFiles(path.join(ROOT, "src")))
    for (const m of fs.readFileSync(file, "utf8").matchAll(/process\.env\.([A-Z][A-Z0-9_]*)/g)) names.add(m[1]!);
  return names;
})();

/** Variables the libraries read themselves (OpenTelemetry's SDK, LangChain), as docs/observability.md lists them. */
const LIBRARY_SETTINGS = new Set([...read("docs/observability.md").matchAll(/`((?:OTEL|LANGSMITH)_[A-Z_]+)`/g)].map((m) => m[1]!));

/** The settings the README's Configuration table documents (the names in each row's first cell). */
const DOCUMENTED: Set<string> = (() => {
  const section = /\n## Configuration\n([\s\S]*?)\n## /.exec(read("README.md"))![1]!;
  const rows = section.split("\n").filter((line) => line.startsWith("| `"));
  return new Set(rows.flatMap((row) => [...row.split("|")[1]!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!)));
})();

const isSetting = (name: string) => SETTINGS.has(name) || LIBRARY_SETTINGS.has(name);

describe("the settings the server reads", () => {
  it("are found in src/config.ts", () => {
    for (const name of [
      "PORT",
      "HOST",
      "DATABASE_URL",
      "REDIS_URL",
      "API_TOKEN",
      "AUTH_JWKS_URL",
      "AUTH_ISSUER",
      "OLLAMA_HOST",
      "MODEL_CONCURRENCY",
      "QUOTA_ACTIVE_RUNS",
    ])
      expect(SETTINGS, name).toContain(name);
    expect(SETTINGS).not.toContain("POSTGRES_PASSWORD");
    expect(DOCUMENTED.size).toBeGreaterThan(50);
    expect([...DOCUMENTED].filter((name) => !isSetting(name))).toEqual([]);
  });
});

// ---------------------------------------------------------------------------
// The Dockerfile

interface Instruction {
  keyword: string;
  args: string;
}

/** The Dockerfile's instructions (continuation lines joined, comments dropped), split into the global part and its stages. */
function dockerfile(): { global: Instruction[]; stages: { from: string; name: string | null; instructions: Instruction[] }[] } {
  const lines = read("Dockerfile")
    .split("\n")
    .filter((line) => !/^\s*#/.test(line));
  const joined = lines.join("\n").replace(/\\\n/g, " ");
  const instructions = joined
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => {
      const m = /^([A-Za-z]+)\s+([\s\S]*)$/.exec(line);
      if (!m) throw new Error(`not an instruction: ${line}`);
      return { keyword: m[1]!.toUpperCase(), args: m[2]!.trim() };
    });
  const global: Instruction[] = [];
  const stages: { from: string; name: string | null; instructions: Instruction[] }[] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === "FROM") {
      const [from, as, name] = instruction.args.split(/\s+/);
      stages.push({ from: from!, name: as?.toUpperCase() === "AS" ? name! : null, instructions: [] });
    } else (stages.at(-1)?.instructions ?? global).push(instruction);
  }
  return { global, stages };
}

/** ENV's key=value pairs (quotes removed). */
function envOf(instructions: Instruction[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { args } of instructions.filter((i) => i.keyword === "ENV"))
    for (const m of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S*)/g)) env[m[1]!] = m[2]!.replace(/^"|"$/g, "");
  return env;
}

const only = (instructions: Instruction[], keyword: string): Instruction => {
  const found = instructions.filter((i) => i.keyword === keyword);
  expect(
    found.map((i) => i.keyword),
    keyword,
  ).toEqual([keyword]);
  return found[0]!;
};

describe("the Dockerfile", () => {
  const { global, stages } = dockerfile();
  const runtime = stages.at(-1)!;
  const ins = runtime.instructions;

  it("takes its base as an argument, node:22-bookworm-slim by default, for every stage", () => {
    expect(global).toEqual([{ keyword: "ARG", args: "BASE=node:22-bookworm-slim" }]);
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages) expect(stage.from).toBe("${BASE}");
  });

  it("builds in stages: npm ci, npm run build and npm pack; production dependencies alone (better-sqlite3 compiled) reach the runtime", () => {
    const runs = (stage: (typeof stages)[number]) =>
      stage.instructions
        .filter((i) => i.keyword === "RUN")
        .map((i) => i.args)
        .join(" && ");
    const build = stages.find((s) => /npm run build/.test(runs(s)));
    expect(build?.name).toBeTruthy();
    expect(runs(build!)).toMatch(/npm ci\b/);
    expect(runs(build!)).toMatch(/npm (pack|prune --omit=dev)\b/);
    // node_modules in the runtime come from a stage that installed with --omit=dev, and nothing else from a stage with dev dependencies.
    const copies = ins.filter((i) => i.keyword === "COPY" && i.args.startsWith("--from="));
    const modules = copies.filter((c) => /node_modules/.test(c.args));
    expect(modules).toHaveLength(1);
    const deps = stages.find((s) => s.name === /^--from=(\S+)/.exec(modules[0]!.args)![1]);
    expect(runs(deps!)).toMatch(/npm ci --omit=dev/);
    // The compilers stay in that stage: the runtime installs no build tools.
    expect(runs(deps!)).toMatch(/python3 make g\+\+/);
    expect(runs(runtime)).not.toMatch(/g\+\+|\bmake\b|python3/);
    for (const copy of copies.filter((c) => c !== modules[0])) expect(copy.args).not.toMatch(/node_modules/);
    // The build's package: its contents (dist/, the migrations, package.json) into /app.
    expect(copies.some((c) => c.args.startsWith(`--from=${build!.name} /app`))).toBe(true);
    for (const stage of stages.slice(0, -1)) expect(runs(stage)).not.toMatch(/npm install\b/);
    // The build installs from the manifests alone (a change to the sources reuses that layer), gathered by a stage of their own;
    // the sources come after the install.
    const ci = build!.instructions.findIndex((i) => i.keyword === "RUN" && /npm ci\b/.test(i.args));
    const buildCopies = build!.instructions.filter((i) => i.keyword === "COPY");
    expect(build!.instructions.slice(0, ci).filter((i) => i.keyword === "COPY")).toEqual([buildCopies[0]]);
    const [, from, source] = /^--from=(\S+) (\S+) \.\/$/.exec(buildCopies[0]!.args)!;
    expect(build!.instructions.slice(ci).find((i) => i.keyword === "COPY")?.args).toBe(". .");
    // That stage's script, run on this checkout: the root's package.json, the lockfile, and every workspace's package.json.
    const manifests = stages.find((stage) => stage.name === from)!;
    expect(manifests.instructions.filter((i) => i.keyword === "COPY").map((i) => i.args)).toEqual([". ."]);
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-manifests-"));
    try {
      const script = runs(manifests).replaceAll(source!.replace(/\/$/, ""), out);
      expect(script).not.toBe(runs(manifests));
      const result = spawnSync("sh", ["-c", script], { cwd: ROOT, encoding: "utf8" });
      expect(result.status, result.stderr).toBe(0);
      const gathered = fs.readdirSync(out, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
      const workspaces = workspaceManifests();
      expect(workspaces.length).toBeGreaterThan(0);
      expect(gathered.map((entry) => path.relative(out, path.join(entry.parentPath, entry.name))).sort()).toEqual(
        ["package-lock.json", "package.json", ...workspaces].sort(),
      );
    } finally {
      fs.rmSync(out, { recursive: true, force: true });
    }
  });

  it("installs runledger's own production dependencies alone: the deps stage cuts the lockfile to what they reach", () => {
    const copy = ins.find((i) => i.keyword === "COPY" && /node_modules/.test(i.args))!;
    const deps = stages.find((stage) => stage.name === /^--from=(\S+)/.exec(copy.args)![1])!;
    const runIns = deps.instructions.filter((i) => i.keyword === "RUN");
    const cut = runIns.findIndex((i) => i.args.startsWith("node -e '"));
    expect(runIns[cut + 1]?.args).toMatch(/^npm ci --omit=dev\b/);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-deps-"));
    try {
      for (const file of ["package.json", "package-lock.json"]) fs.copyFileSync(path.join(ROOT, file), path.join(dir, file));
      const result = spawnSync("sh", ["-c", runIns[cut]!.args], { cwd: dir, encoding: "utf8" });
      expect(result.status, result.stderr).toBe(0);
      const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
      const kept = JSON.parse(fs.readFileSync(path.join(dir, "package-lock.json"), "utf8")).packages as Record<string, any>;
      const original = JSON.parse(read("package-lock.json")).packages as Record<string, any>;
      const ROOT_DEPS = JSON.parse(read("package.json")).dependencies;
      expect(manifest.workspaces).toBeUndefined();
      expect(manifest.devDependencies).toBeUndefined();
      expect(manifest.dependencies).toEqual(ROOT_DEPS);
      expect(kept[""].dependencies).toEqual(ROOT_DEPS);
      expect(kept[""].workspaces).toBeUndefined();
      // The nearest node_modules/<name> up from a package, as Node resolves it.
      const resolve = (from: string, name: string): string | undefined => {
        for (let at = from; ; at = at.includes("/node_modules/") ? at.slice(0, at.lastIndexOf("/node_modules/")) : "") {
          const key = `${at ? `${at}/` : ""}node_modules/${name}`;
          if (kept[key]) return key;
          if (!at) return undefined;
        }
      };
      const needed = new Set<string>();
      for (const [key, entry] of Object.entries(kept)) {
        if (key !== "") expect(entry, key).toEqual(original[key]);
        expect(entry.dev || entry.link, key).toBeFalsy();
        const optionalPeers = entry.peerDependenciesMeta ?? {};
        const required = [
          ...Object.keys(entry.dependencies ?? {}),
          ...Object.keys(entry.peerDependencies ?? {}).filter((peer) => !optionalPeers[peer]?.optional),
        ];
        // Closed: what each package requires is there.
        for (const name of required) expect(resolve(key, name), `${key || "the root"} needs ${name}`).toBeDefined();
        for (const name of [...required, ...Object.keys(entry.optionalDependencies ?? {})]) {
          const found = resolve(key, name);
          if (found) needed.add(found);
        }
      }
      // Nothing else: every package kept is one that another kept package (or the root) depends on.
      expect(Object.keys(kept).filter((key) => key !== "" && !needed.has(key))).toEqual([]);
      expect(Object.keys(kept).length).toBeLessThan(Object.keys(original).length);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("runs as the non-root user node, tini first, node itself in exec form (never npm or a shell)", () => {
    expect(only(ins, "USER").args).toBe("node");
    expect(JSON.parse(only(ins, "ENTRYPOINT").args)).toEqual(["/usr/bin/tini", "--"]);
    expect(runs(ins)).toMatch(/apt-get install [^&]*\btini\b/);
    const cmd = JSON.parse(only(ins, "CMD").args) as string[];
    expect(cmd).toEqual(["node", PACKAGE.bin.runledger, "serve"]);
    // The `runledger` command on PATH names the same file: `runledger migrate` in place of the CMD.
    expect(runs(ins)).toContain(`ln -s /app/${PACKAGE.bin.runledger} /usr/local/bin/runledger`);
    expect(only(ins, "STOPSIGNAL").args).toBe("SIGTERM");
  });

  it("sets NODE_ENV=production and settings the server loads: its port is the one exposed, its SQLite file in the volume", () => {
    const env = envOf(ins);
    expect(env.NODE_ENV).toBe("production");
    for (const name of Object.keys(env)) expect(isSetting(name), name).toBe(true);
    const config = loadConfig(env);
    expect(only(ins, "EXPOSE").args).toBe(String(config.port));
    expect(config.host).toBe("0.0.0.0");
    expect(config.databaseKind).toBe("sqlite");
    expect(config.databasePath.startsWith("/data/")).toBe(true);
    expect(only(ins, "VOLUME").args).toBe("/data");
    // The volume's folder belongs to the user the server runs as.
    expect(runs(ins)).toMatch(/chown node:node \/data/);
    expect(only(ins, "WORKDIR").args).toBe("/app");
  });

  it("labels the image (OCI), with package.json's version", () => {
    const labels = only(ins, "LABEL").args;
    for (const key of ["title", "description", "version"]) expect(labels).toContain(`org.opencontainers.image.${key}=`);
    const version = ins.find((i) => i.keyword === "ARG" && i.args.startsWith("VERSION="));
    expect(version?.args).toBe(`VERSION=${PACKAGE.version}`);
  });

  it("checks /ready on PORT with Node's fetch: exit 0 while it answers 200, 1 on 503 or no answer", async () => {
    const healthcheck = only(ins, "HEALTHCHECK").args;
    expect(healthcheck).toMatch(/--interval=\d+s/);
    expect(healthcheck).toMatch(/--start-period=\d+s/);
    const [, exec] = /\bCMD\s+(\[.*\])$/.exec(healthcheck)!;
    const command = JSON.parse(exec!) as string[];
    expect(command[0]).toBe("node");
    expect(command.join(" ")).toContain("/ready");
    let status = 200;
    const paths: string[] = [];
    const server = http.createServer((req, res) => {
      paths.push(req.url!);
      res.writeHead(status).end("{}");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    const check = (env: Record<string, string>) =>
      new Promise<number | null>((resolve) => {
        const child = spawn(process.execPath, command.slice(1), { env: { PATH: process.env.PATH, ...env }, stdio: "ignore" });
        child.on("exit", (code) => resolve(code));
      });
    try {
      expect(await check({ PORT: String(port) })).toBe(0);
      status = 503;
      expect(await check({ PORT: String(port) })).toBe(1);
      expect(paths).toEqual(["/ready", "/ready"]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    const closed = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, "127.0.0.1", () => {
        const p = (probe.address() as AddressInfo).port;
        probe.close(() => resolve(p));
      });
    });
    expect(await check({ PORT: String(closed) })).toBe(1);
  });

  it("has a .dockerignore that keeps out node_modules, builds, caches and .env, and nothing the build needs", () => {
    const patterns = read(".dockerignore")
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith("#"));
    const ignored = (file: string) =>
      patterns.some((pattern) => {
        // Docker's patterns: ** any folders (none too), * within one name; a folder's pattern covers what it holds.
        const regex = new RegExp(
          `^${pattern
            .replace(/[.+^${}()|[\]\\]/g, "\\$&")
            .split("**/")
            .map((part) => part.replace(/\*/g, "[^/]*"))
            .join("(?:.*/)?")}(?:/.*)?$`,
        );
        return regex.test(file);
      });
    for (const file of [
      "node_modules/x",
      "packages/client/node_modules/x",
      "dist/main.js",
      ".git/HEAD",
      ".cache/x",
      "deploy/.env",
      "data/runledger.db",
      "runledger-0.1.0.tgz",
      "packages/client/dist/index.js",
      "examples/react-chat/dist/server.js",
    ])
      expect(ignored(file), file).toBe(true);
    const needed = [
      "package.json",
      "package-lock.json",
      "tsconfig.json",
      "src/main.ts",
      "src/cli/index.ts",
      "scripts/build.mjs",
      "scripts/console-bundle.mjs",
      "console/index.html",
      "prisma/migrations",
    ];
    needed.push(...workspaceManifests());
    for (const file of needed) {
      expect(fs.existsSync(path.join(ROOT, file)), file).toBe(true);
      expect(ignored(file), file).toBe(false);
    }
  });
});

/** package.json of every workspace package.json's globs (dir/*) name. */
function workspaceManifests(): string[] {
  return PACKAGE.workspaces.flatMap((glob) => {
    const m = /^([\w.-]+)\/\*$/.exec(glob);
    if (!m) throw new Error(`workspace glob ${glob}: only dir/* is read here`);
    const dir = path.join(ROOT, m[1]!);
    return (fs.existsSync(dir) ? fs.readdirSync(dir) : [])
      .filter((name) => fs.existsSync(path.join(dir, name, "package.json")))
      .map((name) => `${m[1]}/${name}/package.json`);
  });
}

function runs(instructions: Instruction[]): string {
  return instructions
    .filter((i) => i.keyword === "RUN")
    .map((i) => i.args)
    .join(" && ");
}

// ---------------------------------------------------------------------------
// deploy/compose.yaml and deploy/.env.example

/** Compose's ${NAME}, ${NAME:-default} (nested), ${NAME-default}, ${NAME:?error}, $$; unset names with no default are an error here. */
function interpolate(text: string, env: Record<string, string | undefined>, used: Set<string>): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    if (text.startsWith("$$", i)) {
      out += "$";
      i += 2;
    } else if (text.startsWith("${", i)) {
      let depth = 1;
      let j = i + 2;
      for (; j < text.length && depth > 0; j++) {
        if (text.startsWith("${", j)) {
          depth++;
          j++;
        } else if (text[j] === "}") depth--;
      }
      const body = text.slice(i + 2, j - 1);
      const m = /^([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([\s\S]*))?$/.exec(body);
      if (!m) throw new Error(`bad interpolation \${${body}}`);
      const [, name, op, rest] = m;
      used.add(name!);
      const value = env[name!];
      const missing = op?.startsWith(":") ? value === undefined || value === "" : value === undefined;
      if (op?.endsWith("?") && missing) throw new Error(`${name}: ${rest}`);
      out += op?.endsWith("-") && missing ? interpolate(rest!, env, used) : (value ?? "");
      if (!op && value === undefined) throw new Error(`${name} is not set and has no default`);
      i = j;
    } else {
      out += text[i++];
    }
  }
  return out;
}

/** .env's NAME=value lines, and the names of the commented ones (# NAME=...). */
function envExample(): { values: Record<string, string>; names: Set<string> } {
  const values: Record<string, string> = {};
  const names = new Set<string>();
  for (const line of read("deploy/.env.example").split("\n")) {
    const set = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    const commented = /^#\s?([A-Z][A-Z0-9_]*)=/.exec(line);
    if (set) values[set[1]!] = set[2]!;
    if (set || commented) names.add((set ?? commented)![1]!);
  }
  return { values, names };
}

const COMPOSE_TEXT = read("deploy/compose.yaml");
/** The secrets a user fills in, with values the server accepts. */
const FILLED = { API_TOKEN: "compose-test-token-0123", POSTGRES_PASSWORD: "pgpassword0123", GRAFANA_ADMIN_PASSWORD: "grafana0123" };

function compose(env: Record<string, string | undefined>): { file: any; used: Set<string> } {
  const used = new Set<string>();
  const doc = parseDocument(COMPOSE_TEXT, { merge: true, uniqueKeys: true });
  expect(doc.errors).toEqual([]);
  const interpolated = JSON.parse(JSON.stringify(doc.toJS()), (_, value) => (typeof value === "string" ? interpolate(value, env, used) : value));
  return { file: interpolated, used };
}

const SERVICE_KEYS = new Set([
  "image",
  "build",
  "command",
  "entrypoint",
  "environment",
  "env_file",
  "ports",
  "expose",
  "volumes",
  "depends_on",
  "healthcheck",
  "restart",
  "stop_grace_period",
  "profiles",
  "extra_hosts",
  "init",
  "user",
  "networks",
  "labels",
  "working_dir",
  "deploy",
]);

function durationMs(text: string): number {
  const m = /^(\d+)(ms|s|m)$/.exec(text);
  if (!m) throw new Error(`duration ${text}`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000 }[m[2] as "ms" | "s" | "m"];
}

describe("deploy/compose.yaml", () => {
  const example = envExample();
  const { file, used } = compose({ ...example.values, ...FILLED });
  const services = file.services as Record<string, any>;
  /** The services that run the server: the image's own command. */
  const servers = Object.entries(services).filter(([name, s]) => s.image === services.migrate?.image && name !== "migrate");
  /** What a server container gets: .env, then environment over it. */
  const serverEnv = (s: any) => ({ ...example.values, ...FILLED, ...s.environment }) as Record<string, string>;

  it("has the shape of a compose file: known keys, declared volumes, files that exist", () => {
    for (const key of Object.keys(file)) expect(["name", "services", "volumes", "networks"].includes(key) || key.startsWith("x-"), key).toBe(true);
    for (const [name, service] of Object.entries(services)) {
      for (const key of Object.keys(service)) expect(SERVICE_KEYS.has(key), `${name}.${key}`).toBe(true);
      expect(typeof service.image === "string", `${name}.image`).toBe(true);
      for (const volume of service.volumes ?? []) {
        const [source] = String(volume).split(":");
        if (source!.startsWith(".")) expect(fs.existsSync(path.join(ROOT, "deploy", source!)), `${name}: ${source}`).toBe(true);
        else expect(Object.keys(file.volumes ?? {}), `${name}: volume ${source}`).toContain(source);
      }
      for (const port of service.ports ?? []) expect(String(port), `${name}: publish on loopback only`).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
    }
    // The image is the repository's Dockerfile.
    expect(services.migrate.build).toEqual({ context: "..", dockerfile: "Dockerfile" });
    expect(fs.existsSync(path.join(ROOT, "deploy", services.migrate.build.context, "Dockerfile"))).toBe(true);
  });

  it("checks PostgreSQL and Redis with healthchecks", () => {
    const test = (name: string) => services[name].healthcheck.test as string[];
    expect(test("postgres")[0]).toBe("CMD-SHELL");
    expect(test("postgres")[1]).toMatch(/^pg_isready -U runledger -d runledger$/);
    expect(services.postgres.environment).toMatchObject({ POSTGRES_USER: "runledger", POSTGRES_DB: "runledger", POSTGRES_PASSWORD: FILLED.POSTGRES_PASSWORD });
    expect(test("redis")).toEqual(["CMD", "redis-cli", "ping"]);
    for (const name of ["postgres", "redis"]) expect(services[name].healthcheck.interval).toMatch(/^\d+s$/);
  });

  it("runs `runledger migrate` once, after PostgreSQL is healthy, and starts two instances once it completed", () => {
    expect(services.migrate.command).toEqual(["node", PACKAGE.bin.runledger, "migrate"]);
    expect(services.migrate.restart).toBe("no");
    expect(services.migrate.depends_on).toEqual({ postgres: { condition: "service_healthy" } });
    expect(servers.map(([name]) => name)).toEqual(["runledger-1", "runledger-2"]);
    for (const [name, server] of servers) {
      expect(server.command, name).toBeUndefined();
      expect(server.depends_on, name).toEqual({
        postgres: { condition: "service_healthy" },
        redis: { condition: "service_healthy" },
        migrate: { condition: "service_completed_successfully" },
      });
      // Stopped within its grace: SHUTDOWN_TIMEOUT_MS and a few seconds.
      expect(durationMs(server.stop_grace_period), name).toBeGreaterThanOrEqual(loadConfig(serverEnv(server)).shutdownTimeoutMs + 5_000);
    }
  });

  it("gives the servers settings the server reads and loads: PostgreSQL and Redis of this file, the published port, /metrics on its own port", () => {
    for (const [name, server] of [...servers, ["migrate", services.migrate] as const]) {
      expect(server.env_file, name).toBe(".env");
      for (const key of Object.keys(server.environment)) expect(SETTINGS.has(key), `${name}: ${key}`).toBe(true);
      const config = loadConfig(serverEnv(server));
      expect(config.databaseKind).toBe("postgres");
      expect(new URL(config.databaseUrl).hostname).toBe("postgres");
      expect(new URL(config.databaseUrl).password).toBe(FILLED.POSTGRES_PASSWORD);
      expect(new URL(config.redisUrl!).hostname).toBe("redis");
      expect(config.apiToken).toBe(FILLED.API_TOKEN);
      expect(config.host).toBe("0.0.0.0");
      expect(config.observability.metricsPort).toBe(9464);
      // One process per container: compose runs two.
      expect(config.workers).toBe(1);
      if (name !== "migrate") for (const port of server.ports) expect(String(port).split(":").at(-1), name).toBe(String(config.port));
    }
    // Their own database and Redis URLs replace the services' when .env sets them.
    const own = compose({ ...example.values, ...FILLED, DATABASE_URL: "postgres://u:p@db.example.com:5432/rl" }).file.services["runledger-1"];
    expect(own.environment.DATABASE_URL).toBe("postgres://u:p@db.example.com:5432/rl");
  });

  it("refuses to start without the secrets", () => {
    for (const name of ["API_TOKEN", "POSTGRES_PASSWORD", "GRAFANA_ADMIN_PASSWORD"] as const)
      expect(() => compose({ ...example.values, ...FILLED, [name]: "" }), name).toThrow(new RegExp(`${name}: set ${name} in deploy/.env`));
  });

  it("has Prometheus scrape /metrics of every instance, and Grafana show the dashboard on it", () => {
    const prometheus = parse(read("deploy/prometheus/prometheus.yml"));
    const [job] = prometheus.scrape_configs;
    expect(job.metrics_path).toBe("/metrics");
    const targets = job.static_configs.flatMap((c: any) => c.targets);
    expect(targets).toEqual(servers.map(([name, server]) => `${name}:${loadConfig(serverEnv(server)).observability.metricsPort}`));
    expect(services.prometheus.volumes).toContain("./prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro");

    const datasource = parse(read("deploy/grafana/provisioning/datasources/prometheus.yaml")).datasources[0];
    expect(datasource.type).toBe("prometheus");
    expect(new URL(datasource.url).hostname).toBe("prometheus");
    expect(new URL(datasource.url).port).toBe(String(services.prometheus.ports[0]).split(":").at(-1));
    const provider = parse(read("deploy/grafana/provisioning/dashboards/runledger.yaml")).providers[0];
    const mount = services.grafana.volumes.find((v: string) => v.startsWith("./grafana/runledger.json:"));
    expect(mount).toBe(`./grafana/runledger.json:${provider.options.path}/runledger.json:ro`);
    expect(services.grafana.volumes).toContain("./grafana/provisioning:/etc/grafana/provisioning:ro");
    // The dashboard's data source variable picks a Prometheus one.
    const dashboard = JSON.parse(read("deploy/grafana/runledger.json"));
    expect(dashboard.templating.list.find((v: any) => v.type === "datasource")?.query).toBe(datasource.type);
  });

  it("has a .env.example naming every documented setting, and only settings or the file's own variables", () => {
    const own = [...used].filter((name) => !isSetting(name));
    expect(own.sort()).toEqual(["GRAFANA_ADMIN_PASSWORD", "POSTGRES_PASSWORD", "RUNLEDGER_IMAGE"]);
    for (const name of example.names) expect(isSetting(name) || own.includes(name), name).toBe(true);
    for (const name of used) expect(example.names, `${name} is used by compose.yaml`).toContain(name);
    // compose.yaml sets these itself, for every container alike.
    const fixed = Object.entries(services.migrate.environment as Record<string, string>)
      .filter(([name]) => !new RegExp(`\\$\\{${name}[:}-]`).test(COMPOSE_TEXT))
      .map(([name]) => name);
    expect(fixed.sort()).toEqual(["HOST", "METRICS_PORT", "PORT"]);
    const missing = [...DOCUMENTED].filter((name) => SETTINGS.has(name) && !fixed.includes(name) && !example.names.has(name));
    expect(missing, "documented settings missing from deploy/.env.example").toEqual([]);
    // What a user must fill in is empty, the rest loads as it is.
    expect(example.values).toMatchObject({ API_TOKEN: "", POSTGRES_PASSWORD: "", GRAFANA_ADMIN_PASSWORD: "" });
    expect(() => compose(example.values)).toThrow(/set .* in deploy\/\.env/);
  });
});

// ---------------------------------------------------------------------------
// deploy/helm/runledger

const CHART = path.join(ROOT, "deploy", "helm", "runledger");
const SECRETS = { secret: { apiToken: "chart-test-token-0123" }, postgresql: { password: "pgpassword0123" } };

const render = (values: Record<string, unknown> = SECRETS, release?: { name?: string; namespace?: string }) => renderChart(CHART, { values, release });
const find = (manifests: Manifest[], kind: string, name?: string) => {
  const found = manifests.filter((m) => m.kind === kind && (name === undefined || m.name === name));
  expect(
    found.map((m) => `${m.kind}/${m.name}`),
    `${kind} ${name ?? ""}`,
  ).toHaveLength(1);
  return found[0]!.doc;
};
const containerOf = (workload: any, name: string) => workload.spec.template.spec.containers.find((c: any) => c.name === name);

/** The environment a container gets: its env, and the Secret's keys (envFrom). */
function containerEnv(manifests: Manifest[], container: any): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) Object.assign(env, find(manifests, "Secret", source.secretRef.name).stringData);
  for (const entry of container.env ?? []) env[entry.name] = entry.value;
  return env;
}

/** The labels `selector` asks for are all on `labels`. */
const selects = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.keys(selector).length > 0 && Object.entries(selector).every(([key, value]) => labels[key] === value);

describe("deploy/helm/runledger", () => {
  it("refuses to render without authentication, a database password, or Redis for several instances", () => {
    expect(() => render({})).toThrow(/set secret.apiToken, secret.auth \(AUTH_\* settings\) or secret.existingSecret/);
    expect(() => render({ secret: { apiToken: "chart-test-token-0123" } })).toThrow(/postgresql.password is required/);
    expect(() => render({ ...SECRETS, postgresql: { enabled: false } })).toThrow(/secret.databaseUrl is required/);
    expect(() => render({ ...SECRETS, redis: { enabled: false } })).toThrow(/several instances need Redis/);
    expect(() => render({ ...SECRETS, secret: { apiToken: "chart-test-token-0123", auth: { OLLAMA_HOST: "x" } } })).toThrow(/AUTH_\* settings only/);
    expect(() => render({ ...SECRETS, env: { PORT: "80" } })).toThrow(/env.PORT is set by the chart/);
  });

  it("makes a Deployment whose settings the server loads: every name one it reads, the port it listens on, PostgreSQL and Redis", () => {
    const { manifests, values } = render();
    const deployment = find(manifests, "Deployment", "release-name-runledger");
    const container = containerOf(deployment, "runledger");
    for (const entry of container.env) {
      expect(SETTINGS.has(entry.name), entry.name).toBe(true);
      expect(typeof entry.value, entry.name).toBe("string");
    }
    const env = containerEnv(manifests, container);
    for (const name of Object.keys(env)) expect(SETTINGS.has(name), name).toBe(true);
    const config = loadConfig(env);
    expect(config.port).toBe(values.containerPort);
    expect(container.ports.find((p: any) => p.name === "http").containerPort).toBe(config.port);
    expect(container.ports.find((p: any) => p.name === "metrics").containerPort).toBe(config.observability.metricsPort);
    expect(config.host).toBe("0.0.0.0");
    expect(config.databaseKind).toBe("postgres");
    expect(new URL(config.databaseUrl).hostname).toBe(find(manifests, "Service", "release-name-runledger-postgresql").metadata.name);
    expect(new URL(config.redisUrl!).hostname).toBe(find(manifests, "Service", "release-name-runledger-redis").metadata.name);
    expect(config.apiToken).toBe(SECRETS.secret.apiToken);
    expect(config.limits.hideSuggestions).toBe(true);
    // One process per pod, whatever the node's cores: the replicas are the instances.
    expect(config.workers).toBe(1);
    expect(deployment.spec.replicas).toBe(2);
    // The image the chart's appVersion names, which is package.json's version.
    const chart = parse(fs.readFileSync(path.join(CHART, "Chart.yaml"), "utf8"));
    expect(chart.appVersion).toBe(PACKAGE.version);
    expect(container.image).toBe(`runledger:${PACKAGE.version}`);
    // The image's own entrypoint and command (tini, then node dist/cli.js serve).
    expect(container.command).toBeUndefined();
    expect(container.args).toBeUndefined();
    // A stop records the active runs before the kubelet's SIGKILL.
    expect(deployment.spec.template.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThanOrEqual(config.shutdownTimeoutMs + 5_000);
  });

  it("probes /health (startup, liveness) and /ready (readiness) on the server's port", () => {
    const { manifests } = render();
    const container = containerOf(find(manifests, "Deployment", "release-name-runledger"), "runledger");
    const port = (p: string | number) => (typeof p === "number" ? p : container.ports.find((c: any) => c.name === p).containerPort);
    const config = loadConfig(containerEnv(manifests, container));
    expect(container.startupProbe.httpGet.path).toBe("/health");
    expect(container.livenessProbe.httpGet.path).toBe("/health");
    expect(container.readinessProbe.httpGet.path).toBe("/ready");
    for (const probe of [container.startupProbe, container.livenessProbe, container.readinessProbe]) {
      expect(port(probe.httpGet.port)).toBe(config.port);
      expect(probe.periodSeconds).toBeGreaterThan(0);
      expect(probe.failureThreshold).toBeGreaterThan(0);
    }
    // Startup allows a slow first start before liveness takes over.
    expect(container.startupProbe.periodSeconds * container.startupProbe.failureThreshold).toBeGreaterThanOrEqual(60);
  });

  it("exposes the server through a Service on the container's port, to the server's pods", () => {
    const { manifests } = render();
    const deployment = find(manifests, "Deployment", "release-name-runledger");
    const service = find(manifests, "Service", "release-name-runledger");
    const pod = deployment.spec.template.metadata.labels;
    expect(selects(service.spec.selector, pod)).toBe(true);
    expect(selects(deployment.spec.selector.matchLabels, pod)).toBe(true);
    const [port] = service.spec.ports;
    expect(containerOf(deployment, "runledger").ports.map((p: any) => p.name)).toContain(port.targetPort);
    expect(port.port).toBe(4000);
    // No other workload's pods carry the server's selector.
    for (const m of manifests.filter((m) => ["Deployment", "StatefulSet", "Job"].includes(m.kind) && m.doc !== deployment))
      expect(selects(service.spec.selector, m.doc.spec.template.metadata.labels), m.name).toBe(false);
  });

  it("keeps API_TOKEN, AUTH_* and DATABASE_URL in a Secret (or yours), never in the pod's env", () => {
    const auth = { AUTH_JWKS_URL: "https://id.example.com/.well-known/jwks.json", AUTH_ISSUER: "https://id.example.com/", AUTH_AUDIENCE: "runledger" };
    const { manifests } = render({ ...SECRETS, secret: { ...SECRETS.secret, auth } });
    const secret = find(manifests, "Secret", "release-name-runledger");
    expect(Object.keys(secret.stringData).sort()).toEqual(["API_TOKEN", "AUTH_AUDIENCE", "AUTH_ISSUER", "AUTH_JWKS_URL", "DATABASE_URL", "REDIS_URL"]);
    for (const name of Object.keys(secret.stringData)) expect(SETTINGS.has(name), name).toBe(true);
    const container = containerOf(find(manifests, "Deployment", "release-name-runledger"), "runledger");
    for (const entry of container.env) expect(entry.name).not.toMatch(/^(API_TOKEN|AUTH_|DATABASE_URL|REDIS_URL)/);
    const config = loadConfig(containerEnv(manifests, container));
    expect(config.auth.jwtKey).toEqual({ kind: "jwks", url: auth.AUTH_JWKS_URL });
    expect(config.auth.audience).toEqual(["runledger"]);

    // AUTH_* alone is authentication enough.
    const jwtOnly = render({ postgresql: SECRETS.postgresql, secret: { auth: { AUTH_JWT_SECRET: "a-shared-secret-of-at-least-32-bytes!" } } });
    expect(Object.keys(find(jwtOnly.manifests, "Secret", "release-name-runledger").stringData)).not.toContain("API_TOKEN");

    // Your own Secret: the chart makes none, and every pod reads yours.
    const yours = render({ postgresql: SECRETS.postgresql, secret: { existingSecret: "runledger-credentials" } });
    expect(yours.manifests.filter((m) => m.kind === "Secret").map((m) => m.name)).toEqual(["release-name-runledger-postgresql"]);
    for (const kind of ["Deployment", "Job"]) {
      const workload = yours.manifests.find((m) => m.kind === kind && m.name.startsWith("release-name-runledger") && !m.name.endsWith("-redis"))!.doc;
      expect(workload.spec.template.spec.containers[0].envFrom, kind).toEqual([{ secretRef: { name: "runledger-credentials" } }]);
    }
  });

  it("runs `runledger migrate` as a hook Job before each release, after its Secret exists", () => {
    for (const bundled of [true, false]) {
      const values = bundled
        ? SECRETS
        : { ...SECRETS, postgresql: { enabled: false }, secret: { ...SECRETS.secret, databaseUrl: "postgres://rl:pw@db.example.com:5432/runledger" } };
      const { manifests } = render(values);
      const job = find(manifests, "Job", "release-name-runledger-migrate");
      const hooks = (doc: any) => doc.metadata.annotations["helm.sh/hook"].split(",");
      // Your PostgreSQL exists before the release: migrate before the install. The bundled one comes with it.
      expect(hooks(job), `bundled: ${bundled}`).toEqual(bundled ? ["post-install", "pre-upgrade"] : ["pre-install", "pre-upgrade"]);
      expect(job.metadata.annotations["helm.sh/hook-delete-policy"]).toBe("before-hook-creation,hook-succeeded");
      const container = job.spec.template.spec.containers[0];
      expect(container.args).toEqual(["node", PACKAGE.bin.runledger, "migrate"]);
      expect(container.image).toBe(containerOf(find(manifests, "Deployment", "release-name-runledger"), "runledger").image);
      expect(job.spec.template.spec.restartPolicy).toBe("Never");
      const config = loadConfig(containerEnv(manifests, container));
      expect(config.databaseKind).toBe("postgres");
      if (!bundled) expect(config.databaseUrl).toBe("postgres://rl:pw@db.example.com:5432/runledger");
      // The Secret it reads is a hook of every phase the Job runs in, made first.
      const secret = find(manifests, "Secret", container.envFrom[0].secretRef.name);
      for (const hook of hooks(job).filter((h: string) => h.startsWith("pre-"))) expect(hooks(secret)).toContain(hook);
      expect(Number(secret.metadata.annotations["helm.sh/hook-weight"])).toBeLessThan(Number(job.metadata.annotations["helm.sh/hook-weight"]));
      expect(manifests.some((m) => m.kind === "StatefulSet")).toBe(bundled);
    }
  });

  it("runs every pod as a non-root user, without privilege escalation, the server on a read-only root", () => {
    const { manifests } = render({ ...SECRETS, autoscaling: { enabled: true } });
    const workloads = manifests.filter((m) => ["Deployment", "StatefulSet", "Job"].includes(m.kind));
    expect(workloads.map((m) => `${m.kind}/${m.name}`).sort()).toEqual([
      "Deployment/release-name-runledger",
      "Deployment/release-name-runledger-redis",
      "Job/release-name-runledger-migrate",
      "StatefulSet/release-name-runledger-postgresql",
    ]);
    for (const { name, doc } of workloads) {
      const pod = doc.spec.template.spec;
      expect(pod.securityContext.runAsNonRoot, name).toBe(true);
      expect(pod.securityContext.runAsUser, name).toBeGreaterThan(0);
      expect(pod.automountServiceAccountToken, name).toBe(false);
      for (const container of pod.containers) {
        expect(container.securityContext.allowPrivilegeEscalation, name).toBe(false);
        expect(container.securityContext.capabilities.drop, name).toEqual(["ALL"]);
        expect(container.securityContext.runAsUser ?? pod.securityContext.runAsUser, name).not.toBe(0);
      }
    }
    const server = find(manifests, "Deployment", "release-name-runledger").spec.template.spec;
    // The image's user node.
    expect(server.securityContext.runAsUser).toBe(1000);
    expect(server.containers[0].securityContext.readOnlyRootFilesystem).toBe(true);
  });

  it("keeps servers up through disruptions (PDB) and scales them on CPU (HPA), replicas then left to it", () => {
    const plain = render();
    const deployment = find(plain.manifests, "Deployment", "release-name-runledger");
    const pdb = find(plain.manifests, "PodDisruptionBudget");
    expect(pdb.apiVersion).toBe("policy/v1");
    expect(selects(pdb.spec.selector.matchLabels, deployment.spec.template.metadata.labels)).toBe(true);
    expect(pdb.spec.minAvailable).toBeLessThan(deployment.spec.replicas);
    // One instance: a PDB would block every drain.
    expect(render({ ...SECRETS, replicaCount: 1 }).manifests.some((m) => m.kind === "PodDisruptionBudget")).toBe(false);
    expect(render({ ...SECRETS, autoscaling: { enabled: true, minReplicas: 1 } }).manifests.some((m) => m.kind === "PodDisruptionBudget")).toBe(false);
    expect(plain.manifests.some((m) => m.kind === "HorizontalPodAutoscaler")).toBe(false);

    const extra = { type: "External", external: { metric: { name: "runledger_runs_queued" }, target: { type: "AverageValue", averageValue: "10" } } };
    const scaled = render({ ...SECRETS, autoscaling: { enabled: true, extraMetrics: [extra] } });
    const hpa = find(scaled.manifests, "HorizontalPodAutoscaler");
    expect(hpa.apiVersion).toBe("autoscaling/v2");
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: "apps/v1", kind: "Deployment", name: "release-name-runledger" });
    expect(hpa.spec.metrics[0]).toEqual({ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 70 } } });
    expect(hpa.spec.metrics[1]).toEqual(extra);
    expect(find(scaled.manifests, "Deployment", "release-name-runledger").spec.replicas).toBeUndefined();
    // CPU utilization needs a CPU request.
    expect(containerOf(find(scaled.manifests, "Deployment", "release-name-runledger"), "runledger").resources.requests.cpu).toBeTruthy();
    expect(read("deploy/helm/runledger/values.yaml")).toContain("runledger_runs_queued");
  });

  it("admits the API from anywhere (or apiFrom), metrics from metricsFrom only, and the databases from the release's pods only", () => {
    const { manifests } = render();
    const server = find(manifests, "NetworkPolicy", "release-name-runledger");
    const deployment = find(manifests, "Deployment", "release-name-runledger");
    expect(selects(server.spec.podSelector.matchLabels, deployment.spec.template.metadata.labels)).toBe(true);
    const rule = (policy: any, port: string | number) => policy.spec.ingress.filter((r: any) => r.ports.some((p: any) => p.port === port));
    expect(rule(server, "http")).toEqual([{ ports: [{ port: "http", protocol: "TCP" }] }]);
    expect(rule(server, "metrics")).toEqual([{ ports: [{ port: "metrics", protocol: "TCP" }], from: [{ podSelector: {} }] }]);
    // No rule without `from` (every source) covers the metrics port; [] closes it.
    const closed = render({ ...SECRETS, networkPolicy: { metricsFrom: [] } });
    expect(rule(find(closed.manifests, "NetworkPolicy", "release-name-runledger"), "metrics")).toEqual([]);

    const job = find(manifests, "Job", "release-name-runledger-migrate").spec.template.metadata.labels;
    const pods = deployment.spec.template.metadata.labels;
    for (const [name, port, clients] of [
      ["release-name-runledger-postgresql", 5432, [pods, job]],
      ["release-name-runledger-redis", 6379, [pods]],
    ] as const) {
      const policy = find(manifests, "NetworkPolicy", name);
      const workload = manifests.find((m) => (m.kind === "StatefulSet" || m.kind === "Deployment") && m.name === name)!.doc;
      expect(selects(policy.spec.podSelector.matchLabels, workload.spec.template.metadata.labels), name).toBe(true);
      const [only] = rule(policy, port);
      for (const labels of clients)
        expect(
          only.from.some((peer: any) => selects(peer.podSelector.matchLabels, labels)),
          name,
        ).toBe(true);
      expect(selects(only.from[0].podSelector.matchLabels, job) && name.endsWith("redis")).toBe(false);
    }
  });

  it("uses your PostgreSQL and Redis instead of its own", () => {
    const { manifests } = render({
      secret: {
        apiToken: "chart-test-token-0123",
        databaseUrl: "postgres://rl:pw@db.example.com:5432/runledger",
        redisUrl: "redis://:pw@cache.example.com:6379",
      },
      postgresql: { enabled: false },
      redis: { enabled: false },
    });
    expect(manifests.filter((m) => /postgresql|redis/.test(m.name))).toEqual([]);
    const config = loadConfig(containerEnv(manifests, containerOf(find(manifests, "Deployment", "release-name-runledger"), "runledger")));
    expect(config.databaseUrl).toBe("postgres://rl:pw@db.example.com:5432/runledger");
    expect(config.redisUrl).toBe("redis://:pw@cache.example.com:6379");
    // One instance may do without Redis.
    const single = render({ ...SECRETS, replicaCount: 1, redis: { enabled: false } });
    expect(
      loadConfig(containerEnv(single.manifests, containerOf(find(single.manifests, "Deployment", "release-name-runledger"), "runledger"))).redisUrl,
    ).toBeUndefined();
  });

  it("renders what the Kubernetes API accepts: names, label and annotation values, env values and ports of the right types", () => {
    const release = "r".repeat(53); // helm's longest release name
    const variants: [string, Record<string, unknown>, { name?: string }?][] = [
      ["defaults", SECRETS],
      ["autoscaling", { ...SECRETS, autoscaling: { enabled: true } }],
      [
        "external",
        {
          secret: { apiToken: "chart-test-token-0123", databaseUrl: "postgres://a:b@db:5432/x", redisUrl: "redis://r:6379" },
          postgresql: { enabled: false },
          redis: { enabled: false },
        },
      ],
      ["existing Secret, no metrics port", { postgresql: SECRETS.postgresql, secret: { existingSecret: "mine" }, metrics: { port: 0 } }],
      // Values YAML 1.1 reads as booleans or numbers unless quoted.
      [
        "YAML 1.1 words",
        {
          ...SECRETS,
          podAnnotations: { "example.com/on": "on", "example.com/y": "y" },
          podLabels: { tier: "no" },
          env: { ...parse(fs.readFileSync(path.join(CHART, "values.yaml"), "utf8")).env, LOG_LEVEL: "info", OLLAMA_THINK: "off" },
        },
      ],
      ["longest release name", SECRETS, { name: release }],
    ];
    const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
    const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
    for (const [variant, values, release] of variants) {
      const { manifests } = render(values, release);
      const problems: string[] = [];
      const strings = (where: string, map: unknown, pattern?: RegExp) => {
        for (const [key, value] of Object.entries((map ?? {}) as Record<string, unknown>))
          if (typeof value !== "string" || (pattern && (value.length > 63 || !pattern.test(value)))) problems.push(`${where}.${key}: ${JSON.stringify(value)}`);
      };
      const port = (where: string, value: unknown, named = false) => {
        if (!(Number.isInteger(value) && (value as number) > 0 && (value as number) < 65536) && !(named && typeof value === "string" && DNS_LABEL.test(value)))
          problems.push(`${where}: ${JSON.stringify(value)}`);
      };
      for (const { kind, name, doc } of manifests) {
        const at = `${kind}/${name}`;
        if (name.length > 63 || !DNS_LABEL.test(name)) problems.push(`${at}: name`);
        strings(`${at} labels`, doc.metadata.labels, LABEL_VALUE);
        strings(`${at} annotations`, doc.metadata.annotations);
        if (kind === "Secret") strings(`${at} stringData`, doc.stringData);
        if (kind === "Service") for (const p of doc.spec.ports) (port(`${at} port`, p.port), port(`${at} targetPort`, p.targetPort, true));
        strings(`${at} selector`, doc.spec?.selector?.matchLabels ?? (kind === "Service" ? doc.spec.selector : undefined), LABEL_VALUE);
        const pod = doc.spec?.template;
        if (!pod) continue;
        strings(`${at} pod labels`, pod.metadata.labels, LABEL_VALUE);
        strings(`${at} pod annotations`, pod.metadata.annotations);
        for (const container of pod.spec.containers) {
          for (const entry of container.env ?? []) if (entry.valueFrom === undefined) strings(`${at} env`, { [entry.name]: entry.value });
          for (const p of container.ports ?? []) port(`${at} containerPort`, p.containerPort);
          for (const probe of [container.startupProbe, container.readinessProbe, container.livenessProbe].filter(Boolean)) {
            if (probe.httpGet) port(`${at} probe port`, probe.httpGet.port, true);
            for (const field of ["periodSeconds", "timeoutSeconds", "failureThreshold", "initialDelaySeconds"])
              if (field in probe && !Number.isInteger(probe[field])) problems.push(`${at} probe ${field}`);
          }
        }
      }
      // Names are unique per kind.
      const names = manifests.map((m) => `${m.kind}/${m.name}`);
      expect(
        names.filter((n, i) => names.indexOf(n) !== i),
        variant,
      ).toEqual([]);
      expect(problems, variant).toEqual([]);
    }
  });

  it("has a values.yaml that documents each value and sets only settings the server reads", () => {
    const doc = parseDocument(fs.readFileSync(path.join(CHART, "values.yaml"), "utf8"));
    expect(isMap(doc.contents)).toBe(true);
    const items = (doc.contents as { items: Pair<Scalar, unknown>[] }).items;
    for (const pair of items) expect(pair.key.commentBefore?.trim(), `values.yaml: ${String(pair.key.value)} has no comment`).toBeTruthy();
    const values = doc.toJS();
    for (const name of Object.keys(values.env)) expect(SETTINGS.has(name), name).toBe(true);
    expect(render().notes).toContain("kubectl -n default port-forward svc/release-name-runledger 4000");
  });
});

// ---------------------------------------------------------------------------
// The renderer itself: it fails rather than guess.

describe("testkit/helm-template.ts", () => {
  const chart = (files: Record<string, string>, values: Record<string, unknown> = {}) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-helm-template-"));
    try {
      fs.mkdirSync(path.join(dir, "templates"));
      fs.writeFileSync(path.join(dir, "Chart.yaml"), "apiVersion: v2\nname: t\nversion: 1.0.0\nappVersion: '2'\n");
      fs.writeFileSync(path.join(dir, "values.yaml"), "a: {c: [x, y], b: 1}\nbig: 1000000\nport: 4000\nword: hi\nempty: ''\n");
      for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, "templates", name), text);
      return renderChart(dir, { values });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };
  const configMap = (...data: string[]) => ["apiVersion: v1", "kind: ConfigMap", "metadata:", "  name: m", "data:", ...data, ""].join("\n");

  it("renders Go's template language as helm does: trimming, range in key order, with, if/else if, define/include, pipelines, Go's numbers", () => {
    const { manifests } = chart(
      {
        "_helpers.tpl": '{{/* a comment */}}\n{{- define "t.name" -}}\n{{ printf "%s-%d" .word (int .big) | trunc 12 | trimSuffix "-" }}\n{{- end -}}',
        "m.yaml": configMap(
          "  {{- range $key, $value := .Values.a }}",
          "  {{ $key }}: {{ $value | toYaml | quote }}",
          "  {{- end }}",
          "  {{- with .Values.word }}",
          "  word: {{ . | quote }}",
          "  {{- end }}",
          "  {{- if .Values.empty }}",
          "  never: x",
          "  {{- else if and .Values.word (not .Values.empty) }}",
          '  elseif: {{ default "fallback" .Values.empty }}',
          "  {{- end }}",
          "  big: {{ .Values.big | quote }}",
          "  port: {{ .Values.port | quote }}",
          '  name: {{ include "t.name" .Values }}',
          "  chart: {{ .Chart.Name }}-{{ .Chart.AppVersion }}-{{ .Release.Name }}",
          '  {{- $items := list "p" "q" }}',
          "  {{- range $i, $item := $items }}",
          "  item{{ $i }}: {{ $item }}",
          "  {{- end }}",
        ),
      },
      { word: "hello" },
    );
    expect(manifests.map((m) => m.doc.data)).toEqual([
      {
        b: "1",
        // go-yaml quotes "y" (a boolean in YAML 1.1).
        c: '- x\n- "y"',
        word: "hello",
        elseif: "fallback",
        big: "1e+06",
        port: "4000",
        name: "hello-100000",
        chart: "t-2-release-name",
        item0: "p",
        item1: "q",
      },
    ]);
  });

  it("refuses what it does not know and what helm would render wrong", () => {
    const failing: [string, RegExp][] = [
      ["{{ .Values.word | upper }}", /function "upper" is not supported/],
      ["{{ .Values.nope }}", /\.Values\.nope is missing/],
      ["{{ .Values.word.x }}", /\.Values\.word is a string, it has no field x/],
      ["{{ .Values.a }}", /a map printed as text/],
      ["{{ if .Values.word }}x", /without \{\{ end \}\}/],
      ["{{ end }}", /unexpected \{\{ end \}\}/],
      ["{{ $nope }}", /undefined variable \$nope/],
      ['{{ required "word2 is required" .Values.empty }}', /word2 is required/],
      ["{{ .Values.word", /unclosed action/],
      ['{{ block "x" . }}{{ end }}', /block.*not supported/],
      // Helm's numbers are float64, a template's constants ints: Go refuses to mix them.
      ['{{ printf "%d" .Values.port }}', /%d of a float64/],
      ["{{ if eq .Values.port 4000 }}x{{ end }}", /eq of incompatible types/],
      ["{{ if gt .Values.port 1 }}x{{ end }}", /gt of incompatible types/],
      ['{{ printf "%s:%s" .Values.word .Values.port }}', /%s of a float64/],
      ['{{ printf "%x" (int .Values.port) }}', /%x is not supported/],
      ['{{ printf "%s" .Values.word .Values.word }}', /too many arguments/],
    ];
    for (const [action, error] of failing) expect(() => chart({ "m.yaml": configMap(`  x: ${action}`) }), action).toThrow(error);
    expect(() => chart({ "m.yaml": configMap("  x: {{ .Values.word }}", "  x: twice") })).toThrow(/renders invalid YAML/);
    expect(() => chart({ "m.yaml": "kind: ConfigMap\n" })).toThrow(/without apiVersion, kind and metadata.name/);
    expect(() => chart({ "m.yaml": configMap("  x: y") }, { word: "x" })).not.toThrow(TemplateError);
  });

  it("compares ints with ints, and keeps strings strings through toYaml as YAML 1.1 reads them", () => {
    const { manifests } = chart(
      {
        "m.yaml": [
          "apiVersion: v1",
          "kind: ConfigMap",
          "metadata:",
          "  name: m",
          "  annotations:",
          "    {{- toYaml .Values.flags | nindent 4 }}",
          "data:",
          '  port: {{ if eq (int .Values.port) 4000 }}"int"{{ end }}',
          '  d: {{ printf "%d" (int .Values.port) | quote }}',
          "",
        ].join("\n"),
      },
      { flags: { y: "y", on: "on", mode: "0755", time: "1:20", none: "~" } },
    );
    expect(manifests[0]!.doc.metadata.annotations).toEqual({ y: "y", on: "on", mode: "0755", time: "1:20", none: "~" });
    expect(manifests[0]!.doc.data).toEqual({ port: "int", d: "4000" });
  });
});
