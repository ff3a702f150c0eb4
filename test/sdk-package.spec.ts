// @runledger/client as a package: its API types are what graphql-codegen
// generates from schema.graphql and its documents; `npm pack` (which builds it
// with tsc) makes a tarball that a fresh app outside the repository installs,
// type-checks against (strictly, the package's declarations included, with
// docs/client.md's quick start) and runs as ES modules; a wrong answer to a
// built-in interrupt does not compile.
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as esbuild from "esbuild";
import * as prettier from "prettier";
import { generate } from "@graphql-codegen/cli";
import config from "../packages/client/codegen.ts";
import { ROOT } from "../testkit/app.ts";

const run = promisify(execFile);
const PACKAGE = path.join(ROOT, "packages", "client");
const GENERATED = "packages/client/src/generated.ts";
const TSC = path.join(ROOT, "node_modules", "typescript", "bin", "tsc");

let dir: string;
let tarball: string;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-client-pack-"));
  // npm pack runs the package's prepack (tsc) and writes the tarball here.
  const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", dir], { cwd: PACKAGE, timeout: 120_000 });
  const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
  tarball = path.join(dir, packed!.filename);
}, 150_000);

afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("the API types", () => {
  it("are what graphql-codegen generates from schema.graphql and the client's documents (npm run codegen after changing either)", async () => {
    const files = (await generate({ ...config, cwd: ROOT, silent: true, hooks: {} }, false)) as { filename: string; content: string }[];
    const content = files.find((f) => f.filename === GENERATED)!.content;
    const formatted = await prettier.format(content, { ...(await prettier.resolveConfig(path.join(ROOT, GENERATED))), filepath: path.join(ROOT, GENERATED) });
    expect(fs.readFileSync(path.join(ROOT, GENERATED), "utf8")).toBe(formatted);
    const documents = ["documents.ts", "extra-documents.ts"].map((file) => fs.readFileSync(path.join(PACKAGE, "src", file), "utf8")).join("\n");
    const names = [...documents.matchAll(/^\s*(query|mutation|subscription|fragment) (\w+)/gm)].map(
      ([, kind, name]) => `${name}${kind![0]!.toUpperCase()}${kind!.slice(1)}`,
    );
    expect(names.length).toBeGreaterThanOrEqual(12);
    for (const name of names) expect(formatted).toContain(`export type ${name} =`);
  });
});

describe("a chat page's bundle", () => {
  it("imports on demand what a chat page may not use: the SSE transport, fork and edit, a gap's refill; the lists' documents stay out", async () => {
    const onDemand = ["./sse.js", "./branch-actions.js", "./run-refill.js", "./conversation-list.js"];
    const built = await esbuild.build({
      stdin: { contents: `export { createRunledgerClient } from "./packages/client/src/index.ts";`, resolveDir: ROOT, loader: "ts" },
      bundle: true,
      format: "esm",
      platform: "browser",
      write: false,
      external: ["graphql-ws", ...onDemand],
      logLevel: "silent",
    });
    const code = built.outputFiles[0]!.text;
    for (const module of onDemand) expect(code).toContain(`import("${module}")`);
    expect(code).toContain("mutation RunledgerStartRun");
    for (const left of ["mutation RunledgerForkConversation", "mutation RunledgerEditState", "query RunledgerConversations", "query RunledgerCheckpoints"]) {
      expect(code).not.toContain(left);
    }
    expect(code).not.toContain("text/event-stream");
  });
});

describe("npm pack", () => {
  it("makes a tarball of the built ES modules and their declarations, with no sources and no dependency but graphql-ws", async () => {
    const { stdout } = await run("tar", ["-tzf", tarball]);
    const files = stdout.trim().split("\n").sort();
    expect(files).toContain("package/package.json");
    for (const name of ["index", "testing", "client", "conversation", "websocket", "sse"]) {
      expect(files).toContain(`package/dist/${name}.js`);
      expect(files).toContain(`package/dist/${name}.d.ts`);
    }
    expect(files.filter((f) => !f.startsWith("package/dist/") && f !== "package/package.json")).toEqual([]);
    const manifest = JSON.parse((await run("tar", ["-xzOf", tarball, "package/package.json"])).stdout) as Record<string, any>;
    expect(manifest).toMatchObject({ name: "@runledger/client", version: "0.1.0", type: "module", sideEffects: false });
    expect(manifest.exports["."]).toEqual({ types: "./dist/index.d.ts", default: "./dist/index.js" });
    expect(manifest.exports["./testing"]).toEqual({ types: "./dist/testing.d.ts", default: "./dist/testing.js" });
    expect(manifest.dependencies ?? {}).toEqual({});
    expect(Object.keys(manifest.peerDependencies)).toEqual(["graphql-ws"]);
    const built = fs.readFileSync(path.join(PACKAGE, "dist", "index.js"), "utf8");
    expect(built).not.toMatch(/react/i);
  });

  it("installs into a fresh app, which type-checks strictly and runs; a wrong interrupt answer does not compile", async () => {
    const app = path.join(dir, "fresh-app");
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, "package.json"), JSON.stringify({ name: "fresh-app", private: true, type: "module" }));
    // The tarball from disk, nothing from the network; its peer (graphql-ws, with graphql) is the repository's own copy.
    await run("npm", ["install", tarball, "--offline", "--no-audit", "--no-fund", "--ignore-scripts", "--legacy-peer-deps"], { cwd: app, timeout: 120_000 });
    for (const name of ["graphql-ws", "graphql"]) fs.symlinkSync(path.join(ROOT, "node_modules", name), path.join(app, "node_modules", name), "dir");
    expect(fs.existsSync(path.join(app, "node_modules", "@runledger", "client", "dist", "index.js"))).toBe(true);
    expect(fs.lstatSync(path.join(app, "node_modules", "@runledger", "client")).isSymbolicLink()).toBe(false);

    fs.writeFileSync(
      path.join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          lib: ["ES2022", "DOM"],
          types: [],
          outDir: "out",
          skipLibCheck: false,
        },
        include: ["app.ts", "quickstart.ts"],
      }),
    );
    // docs/client.md's quick start, as it is written there.
    const quickStart = /```ts\n([^]*?)```/.exec(fs.readFileSync(path.join(ROOT, "docs", "client.md"), "utf8"))![1]!;
    expect(quickStart).toContain("createRunledgerClient");
    fs.writeFileSync(path.join(app, "quickstart.ts"), quickStart);
    fs.writeFileSync(
      path.join(app, "app.ts"),
      `import { createRunledgerClient, type AnswerTo, type ConversationSnapshot, type PendingInterrupt } from "@runledger/client";
import { createTestTransport } from "@runledger/client/testing";

type Approval = Extract<PendingInterrupt, { kind: "tool_approval" }>;
export const approveAll = (question: Approval): AnswerTo<Approval> => ({ toolCalls: question.value.toolCalls.map((call) => ({ id: call.id, decision: "approve" })) });

const client = createRunledgerClient({ transport: createTestTransport() });
const store = client.conversation();
const sent = await store.submit("Hello from a fresh app");
if (!sent.ok) throw new Error(sent.error.message);
const done = await new Promise<ConversationSnapshot>((resolve) => {
  const check = () => {
    const snapshot = store.getSnapshot();
    if (snapshot.run?.status === "COMPLETED" && snapshot.messages.every((m) => m.state === "stored")) resolve(snapshot);
  };
  store.subscribe(check);
  check();
});
console.log(JSON.stringify(done.messages.map((m) => m.content)));
await client.dispose();
`,
    );
    const checked = await run(process.execPath, [TSC, "-p", app], { cwd: app }).then(
      (r) => ({ ok: true, output: r.stdout }),
      (e: { stdout?: string }) => ({ ok: false, output: String(e.stdout) }),
    );
    expect(checked.output).toBe("");
    expect(checked.ok).toBe(true);
    const ran = await run(process.execPath, [path.join(app, "out", "app.js")], { cwd: app });
    expect(fs.existsSync(path.join(app, "out", "quickstart.js"))).toBe(true);
    expect(JSON.parse(ran.stdout)).toEqual(["Hello from a fresh app", "Echo: Hello from a fresh app"]);

    fs.writeFileSync(
      path.join(app, "wrong.ts"),
      `import type { AnswerTo, PendingInterrupt } from "@runledger/client";
export const answer: AnswerTo<Extract<PendingInterrupt, { kind: "tool_in_doubt" }>> = { decision: "maybe" };
`,
    );
    fs.writeFileSync(
      path.join(app, "tsconfig.json"),
      JSON.stringify({ ...JSON.parse(fs.readFileSync(path.join(app, "tsconfig.json"), "utf8")), include: ["wrong.ts"] }),
    );
    const wrong = await run(process.execPath, [TSC, "-p", app, "--noEmit"], { cwd: app }).then(
      () => ({ ok: true, output: "" }),
      (e: { stdout?: string }) => ({ ok: false, output: String(e.stdout) }),
    );
    expect(wrong.ok).toBe(false);
    expect(wrong.output).toMatch(/wrong\.ts.*'"maybe"' is not assignable/s);
  }, 120_000);
});
