// @runledger/react as a package: `npm pack` (whose prepack builds the client,
// then the hooks, with tsc) makes a tarball of ES modules and declarations whose only
// imports are react and @runledger/client, both peers. A fresh app outside
// the repository installs it with the client's tarball, type-checks a TSX
// file that uses every hook and docs/client.md's React quick start (strictly,
// the packages' declarations included), and runs a server render of a
// conversation read with loadConversation; a wrong use does not compile.
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../testkit/app.ts";

const run = promisify(execFile);
const PACKAGES = path.join(ROOT, "packages");
const TSC = path.join(ROOT, "node_modules", "typescript", "bin", "tsc");

let dir: string;
const tarballs: Record<"client" | "react", string> = { client: "", react: "" };

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-react-pack-"));
  // The two packages as they are in the repository (manifest, tsconfig, sources), side by side in a folder of
  // their own: their prepack scripts build there, so another spec packing the client meanwhile
  // (sdk-package.spec) never reads a declaration this one is writing, nor the other way round.
  const staged = path.join(dir, "packages");
  const link = (target: string, at: string) => {
    fs.mkdirSync(path.dirname(at), { recursive: true });
    fs.symlinkSync(target, at, "dir");
  };
  for (const name of ["client", "react"]) {
    for (const entry of ["package.json", "tsconfig.json", "src"])
      fs.cpSync(path.join(PACKAGES, name, entry), path.join(staged, name, entry), { recursive: true });
  }
  // The client builds against the repository's dependencies; the hooks against React's types and the staged client.
  link(path.join(ROOT, "node_modules"), path.join(staged, "client", "node_modules"));
  for (const name of [".bin", "react", "@types/react", "csstype", "typescript"])
    link(path.join(ROOT, "node_modules", name), path.join(staged, "react", "node_modules", name));
  link(path.join(staged, "client"), path.join(staged, "react", "node_modules", "@runledger", "client"));
  // One after the other: the hooks' prepack builds the client too.
  for (const name of ["client", "react"] as const) {
    const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", dir], { cwd: path.join(staged, name), timeout: 120_000 });
    const [packed] = JSON.parse(stdout) as { filename: string }[];
    tarballs[name] = path.join(dir, packed!.filename);
  }
}, 240_000);

afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("npm pack", () => {
  it("makes a tarball of the built ES modules and their declarations, importing only react and the client, both peers", async () => {
    const { stdout } = await run("tar", ["-tzf", tarballs.react]);
    const files = stdout.trim().split("\n").sort();
    for (const name of ["index", "hooks", "context"]) {
      expect(files).toContain(`package/dist/${name}.js`);
      expect(files).toContain(`package/dist/${name}.d.ts`);
    }
    expect(files.filter((f) => !f.startsWith("package/dist/") && f !== "package/package.json")).toEqual([]);
    const manifest = JSON.parse((await run("tar", ["-xzOf", tarballs.react, "package/package.json"])).stdout) as Record<string, any>;
    expect(manifest).toMatchObject({ name: "@runledger/react", version: "0.1.0", type: "module", sideEffects: false });
    expect(manifest.exports["."]).toEqual({ types: "./dist/index.d.ts", default: "./dist/index.js" });
    expect(manifest.dependencies ?? {}).toEqual({});
    expect(manifest.peerDependencies).toEqual({ "@runledger/client": "0.1.0", react: ">=18" });
    // What the built modules import: each other, react and the client, nothing else (no react-dom).
    const imports = async (suffix: string) => {
      const found = new Set<string>();
      for (const file of files.filter((f) => f.endsWith(suffix))) {
        const text = (await run("tar", ["-xzOf", tarballs.react, file])).stdout;
        for (const [, specifier] of text.matchAll(/from "([^"]+)"/g)) if (!specifier!.startsWith("./")) found.add(specifier!);
      }
      return [...found].sort();
    };
    expect(await imports(".js")).toEqual(["@runledger/client", "react"]);
    expect(await imports(".d.ts")).toEqual(["@runledger/client", "react"]);
  });

  it("installs into a fresh app, which type-checks a TSX file using every hook and the docs' React quick start, and renders on the server", async () => {
    const app = path.join(dir, "fresh-react-app");
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, "package.json"), JSON.stringify({ name: "fresh-react-app", private: true, type: "module" }));
    // The tarballs from disk, nothing from the network; the peers are the repository's own copies.
    await run("npm", ["install", tarballs.client, tarballs.react, "--offline", "--no-audit", "--no-fund", "--ignore-scripts", "--legacy-peer-deps"], {
      cwd: app,
      timeout: 120_000,
    });
    for (const name of ["graphql-ws", "graphql", "react", "react-dom", "@types/react", "@types/react-dom", "csstype"]) {
      fs.mkdirSync(path.dirname(path.join(app, "node_modules", name)), { recursive: true });
      fs.symlinkSync(path.join(ROOT, "node_modules", name), path.join(app, "node_modules", name), "dir");
    }
    for (const name of ["client", "react"]) {
      expect(fs.lstatSync(path.join(app, "node_modules", "@runledger", name)).isSymbolicLink()).toBe(false);
      expect(fs.existsSync(path.join(app, "node_modules", "@runledger", name, "dist", "index.js"))).toBe(true);
    }

    const tsconfig = {
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        jsx: "react-jsx",
        strict: true,
        lib: ["ES2022", "DOM"],
        types: [],
        outDir: "out",
        skipLibCheck: false,
      },
      include: ["app.tsx", "quickstart.tsx"],
    };
    fs.writeFileSync(path.join(app, "tsconfig.json"), JSON.stringify(tsconfig));
    // docs/client.md's React quick start, as it is written there.
    const quickStart = /```tsx\n([^]*?)```/.exec(fs.readFileSync(path.join(ROOT, "docs", "client.md"), "utf8"))![1]!;
    expect(quickStart).toContain("useConversation");
    fs.writeFileSync(path.join(app, "quickstart.tsx"), quickStart);
    fs.writeFileSync(
      path.join(app, "app.tsx"),
      `import { createRunledgerClient, loadConversation } from "@runledger/client";
import { createTestTransport } from "@runledger/client/testing";
import {
  RunledgerProvider,
  useCheckpoints,
  useConnection,
  useConversation,
  useConversations,
  useInterrupts,
  useRun,
  useRunledgerClient,
  type ChatMessage,
  type CheckpointRow,
  type ConversationState,
  type ConversationView,
  type PendingInterrupt,
} from "@runledger/react";
import { renderToString } from "react-dom/server";

function Message({ message }: { message: ChatMessage }) {
  return <li data-state={message.state}>{message.content}</li>;
}

function Chat({ id, initial }: { id: string | null; initial?: ConversationState }) {
  const chat: ConversationView = useConversation(id, { initial, pageSize: 20 });
  const connection = useConnection();
  const list = useConversations({ pageSize: 10 });
  const run = useRun(chat.activeRun?.id ?? null);
  const waiting = useInterrupts(id);
  const history = useCheckpoints(id, { pageSize: 5 });
  const forkAt = (row: CheckpointRow) => void chat.fork(row.id, { message: "Again" });
  const older = () => void Promise.all([chat.loadOlder(), history.loadOlder()]);
  const client = useRunledgerClient();
  const ask: readonly PendingInterrupt[] = chat.interrupts;
  const send = () => void chat.submit("Hello", { multitask: "ENQUEUE" });
  return (
    <main
      data-connection={connection.status}
      data-client={typeof client.conversation}
      data-asks={ask.length + waiting.interrupts.length}
      data-run={run.run?.status ?? ""}
      data-seq={chat.lastSeq}
      data-pending={chat.pending.length}
      onClick={send}
    >
      <h1>{chat.title}</h1>
      <ol>{chat.messages.map((m) => <Message key={m.id} message={m} />)}</ol>
      <p>{chat.run?.status ?? "no run"}, {list.rows.length} listed</p>
      <p>{chat.hasOlder ? <button onClick={older}>{chat.olderCount} older</button> : null}</p>
      <ul data-history={history.phase}>{history.checkpoints.map((c) => <li key={c.id} onClick={() => forkAt(c)}>{c.step}</li>)}</ul>
    </main>
  );
}

const transport = createTestTransport();
const id = transport.addConversation({
  title: "Rendered on the server",
  messages: [
    { id: "m1", role: "USER", content: "Hello there", toolCalls: [], toolCallId: null, name: null },
    { id: "m2", role: "ASSISTANT", content: "Hello back", toolCalls: [], toolCallId: null, name: null },
  ],
});
const client = createRunledgerClient({ transport });
const state = await loadConversation(client, id);
console.log(renderToString(<RunledgerProvider client={client}><Chat id={id} initial={state} /></RunledgerProvider>));
await client.dispose();
`,
    );
    const checked = await run(process.execPath, [TSC, "-p", app], { cwd: app }).then(
      (r) => ({ ok: true, output: r.stdout }),
      (e: { stdout?: string }) => ({ ok: false, output: String(e.stdout) }),
    );
    expect(checked.output).toBe("");
    expect(checked.ok).toBe(true);
    expect(fs.existsSync(path.join(app, "out", "quickstart.js"))).toBe(true);
    const ran = await run(process.execPath, [path.join(app, "out", "app.js")], { cwd: app });
    expect(ran.stdout).toContain("<h1>Rendered on the server</h1>");
    expect(ran.stdout).toContain('<li data-state="stored">Hello there</li><li data-state="stored">Hello back</li>');
    // On the server the connection is the hydration's "connecting", and the checkpoint list is not read yet.
    expect(ran.stdout).toContain('data-connection="connecting"');
    expect(ran.stdout).toContain('<ul data-history="loading"></ul>');

    fs.writeFileSync(
      path.join(app, "wrong.tsx"),
      `import { useConversation } from "@runledger/react";
export function Wrong() {
  const chat = useConversation(42);
  return <p>{chat.phase}</p>;
}
`,
    );
    fs.writeFileSync(path.join(app, "tsconfig.json"), JSON.stringify({ ...tsconfig, include: ["wrong.tsx"] }));
    const wrong = await run(process.execPath, [TSC, "-p", app, "--noEmit"], { cwd: app }).then(
      () => ({ ok: true, output: "" }),
      (e: { stdout?: string }) => ({ ok: false, output: String(e.stdout) }),
    );
    expect(wrong.ok).toBe(false);
    expect(wrong.output).toMatch(/wrong\.tsx.*'number' is not assignable to parameter of type 'string'/s);
  }, 180_000);
});
