// The client setups the documentation shows (docs/clients.md, which the README's
// "Clients" links to) are the code the client specs run: each
// `#region readme:NAME` of test/clients/*.ts, and codegen.ts whole, appear in
// docs/clients.md as a ts block, verbatim. And the Node versions the README
// states are package.json's engines.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../testkit/app.ts";

const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
const clientsPage = fs.readFileSync(path.join(ROOT, "docs", "clients.md"), "utf8");
const tsBlocks = [...clientsPage.matchAll(/```ts\n([^]*?)```/g)].map((m) => m[1]);

function regions(): { name: string; code: string }[] {
  const dir = path.join(ROOT, "test", "clients");
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(".ts"))
    .flatMap((file) =>
      [...fs.readFileSync(path.join(dir, file), "utf8").matchAll(/\/\/ #region readme:(\w+)\n([^]*?)\/\/ #endregion readme:\1\n/g)].map((m) => ({
        name: m[1]!,
        code: m[2]!,
      })),
    );
}

describe("README", () => {
  it("shows each client setup as the specs run it", () => {
    const found = regions();
    expect(found.map((r) => r.name).sort()).toEqual(["apollo", "codegen", "relay", "urql"]);
    for (const { name, code } of found) expect(tsBlocks, `docs/clients.md block for ${name}`).toContain(code);
    expect(tsBlocks).toContain(fs.readFileSync(path.join(ROOT, "codegen.ts"), "utf8"));
  });

  it("states the Node versions package.json's engines allow", () => {
    const engines = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")).engines.node;
    expect(readme).toContain(`(\`engines\`: \`${engines}\`)`);
  });
});
