import { describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { printSchemaSdl } from "../src/schema/index.ts";
import { ROOT } from "./support/app.ts";

describe("schema.graphql", () => {
  it("is generated from the code (npm run schema:print)", () => {
    const committed = fs.readFileSync(`${ROOT}/schema.graphql`, "utf8");
    expect(committed).toBe(printSchemaSdl());
  });

  it("schema:check passes on a current file and fails on a stale one", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-schema-"));
    const file = path.join(dir, "schema.graphql");
    const check = () => execFileSync("npm", ["run", "-s", "schema:check", "--", file], { cwd: ROOT, stdio: "pipe" }).toString();
    fs.writeFileSync(file, printSchemaSdl());
    expect(check()).toContain("up to date");
    fs.writeFileSync(file, printSchemaSdl().replace("type Run implements Node {", "type Run implements Node {\n  stale: Int"));
    expect(check).toThrow();
  });

  it("keeps the contract's names", () => {
    const sdl = printSchemaSdl();
    for (const name of [
      "interface Node", "interface Error", "enum ErrorCode", "enum RunErrorCode", "type Conversation implements Node",
      "type Run implements Node", "union StartRunResult", "union ResumeRunResult", "union CancelRunResult",
      "union RenameConversationResult", "union DeleteConversationResult", "type RunConnection", "type ConversationConnection",
      "interface RunEvent", "type RunStatusEvent implements RunEvent", "type TokenEvent implements RunEvent",
    ]) {
      expect(sdl).toContain(name);
    }
  });
});
