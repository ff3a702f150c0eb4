import { describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { printSchemaSdl } from "../src/schema/index.ts";
import { ROOT } from "./support/app.ts";

describe("schema.graphql", () => {
  it("is generated from the code (npm run schema:print)", () => {
    const committed = fs.readFileSync(`${ROOT}/schema.graphql`, "utf8");
    expect(committed).toBe(printSchemaSdl());
  });

  it("schema:check fails on a stale file", () => {
    const file = `${ROOT}/schema.graphql`;
    const original = fs.readFileSync(file, "utf8");
    try {
      fs.writeFileSync(file, original + "\n# stale\n");
      expect(() => execFileSync("npm", ["run", "-s", "schema:check"], { cwd: ROOT, stdio: "pipe" })).toThrow();
    } finally {
      fs.writeFileSync(file, original);
    }
    expect(execFileSync("npm", ["run", "-s", "schema:check"], { cwd: ROOT, stdio: "pipe" }).toString()).toContain("up to date");
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
