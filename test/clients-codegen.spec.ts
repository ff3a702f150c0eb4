// graphql-codegen with the shipped codegen.ts: the committed output is what it
// generates from schema.graphql, a typed client (test/clients/typed-client.ts)
// type-checks against it (and would not with the custom scalars unmapped,
// codegen's `unknown`), and that client runs against a real server. The
// console's operation types (console/codegen.ts) are committed as generated too.
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { generate } from "@graphql-codegen/cli";
import config from "../codegen.ts";
import consoleConfig from "../console/codegen.ts";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { ROOT, startTestApp } from "../testkit/app.ts";
import { createUrqlClient } from "./clients/urql.ts";
import { startAndFollow } from "./clients/typed-client.ts";

const run = promisify(execFile);
const OUTPUT = "test/clients/generated/graphql.ts";
const CONSOLE_OUTPUT = "console/src/api/generated.ts";

/** Runs codegen with codegen.ts, its output kept in memory; `change` may alter the output's config first. */
async function codegen(change: (outputConfig: Record<string, any>) => void = () => {}): Promise<string> {
  const target = structuredClone((config.generates as Record<string, any>)[OUTPUT]);
  change(target.config);
  const files = await generate({ ...config, cwd: ROOT, silent: true, generates: { [OUTPUT]: target } }, false);
  return (files as { filename: string; content: string }[])[0]!.content;
}

/** tsc on typed-client.ts beside the given generated file, in a folder of the project (so node_modules resolves). */
async function typeCheck(generated: string): Promise<{ ok: boolean; output: string }> {
  const dir = fs.mkdtempSync(path.join(ROOT, ".cache", "codegen-"));
  try {
    fs.mkdirSync(path.join(dir, "generated"));
    fs.writeFileSync(path.join(dir, "generated", "graphql.ts"), generated);
    fs.copyFileSync(path.join(ROOT, "test/clients/typed-client.ts"), path.join(dir, "typed-client.ts"));
    fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify({ extends: path.join(ROOT, "tsconfig.json"), include: ["typed-client.ts"] }));
    try {
      const { stdout } = await run(process.execPath, [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-p", dir], { cwd: dir });
      return { ok: true, output: stdout };
    } catch (error) {
      return { ok: false, output: String((error as { stdout?: string }).stdout ?? error) };
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

let fake: FakeOllama;
let app: Awaited<ReturnType<typeof startTestApp>>;

beforeAll(async () => {
  fs.mkdirSync(path.join(ROOT, ".cache"), { recursive: true });
  fake = await startFakeOllama();
  app = await startTestApp({ ollamaUrl: fake.url });
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});

describe("graphql-codegen with codegen.ts", () => {
  it("generates the committed file, and the typed client type-checks against it", async () => {
    const generated = await codegen();
    expect(fs.readFileSync(path.join(ROOT, OUTPUT), "utf8")).toBe(generated);
    expect(generated).toContain("startedAt: string");
    expect(generated).toContain("args: JsonValue");
    const checked = await typeCheck(generated);
    expect(checked.output).toBe("");
    expect(checked.ok).toBe(true);
  });

  it("with DateTime and JSON left unmapped (unknown), the same client does not type-check", async () => {
    const generated = await codegen((outputConfig) => delete outputConfig.scalars);
    expect(generated).toContain("startedAt: unknown");
    const checked = await typeCheck(generated);
    expect(checked.ok).toBe(false);
    expect(checked.output).toMatch(/typed-client\.ts.*Argument of type 'unknown' is not assignable to parameter of type 'string'/);
  });

  it("generates the console's committed operation types from its documents (npm run codegen after changing them)", async () => {
    const files = await generate({ ...consoleConfig, cwd: ROOT, silent: true }, false);
    const generated = (files as { filename: string; content: string }[]).find((file) => file.filename === CONSOLE_OUTPUT)!.content;
    expect(fs.readFileSync(path.join(ROOT, CONSOLE_OUTPUT), "utf8")).toBe(generated);
    // Every operation and fragment of documents.ts has its type.
    const documents = fs.readFileSync(path.join(ROOT, "console/src/api/documents.ts"), "utf8");
    const names = [...documents.matchAll(/^\s*(query|mutation|subscription|fragment) (\w+)/gm)].map(
      ([, kind, name]) => `${name}${kind![0]!.toUpperCase()}${kind!.slice(1)}`,
    );
    expect(names.length).toBeGreaterThan(10);
    for (const name of names) expect(generated).toContain(`export type ${name} = `);
  });

  it("the typed client runs against a real server", async () => {
    const followed = await startAndFollow(createUrqlClient(app.url, { webSocketImpl: WebSocket }), "Please calculate 6 * 7");
    expect(followed.status).toBe("COMPLETED");
    expect(followed.text).toBe("The result is 42.");
    expect(followed.toolArgs).toEqual([{ expression: "6 * 7" }]);
    expect(Math.abs(followed.startedAt - Date.now())).toBeLessThan(60_000);
  });
});
