import { describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { isInterfaceType, isObjectType } from "graphql";
import { printSchemaSdl, schema } from "../src/schema/index.ts";
import { printPossibleTypes } from "../scripts/possible-types.ts";
import { ROOT } from "../testkit/app.ts";

describe("schema.graphql", () => {
  it("is generated from the code (npm run schema:print)", () => {
    const committed = fs.readFileSync(`${ROOT}/schema.graphql`, "utf8");
    expect(committed).toBe(printSchemaSdl());
  });

  it("has possibleTypes.json beside it, every interface and union with its object types (for Apollo Client)", () => {
    const committed = JSON.parse(fs.readFileSync(`${ROOT}/possibleTypes.json`, "utf8"));
    expect(fs.readFileSync(`${ROOT}/possibleTypes.json`, "utf8")).toBe(printPossibleTypes(schema));
    expect(committed.Error).toContain("NotFoundError");
    expect(committed.RenameConversationResult).toEqual(["NotFoundError", "RenameConversationSuccess", "ValidationError"]);
  });

  it("schema:check passes on current files and fails on a stale schema.graphql or possibleTypes.json", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "runledger-schema-"));
    const file = path.join(dir, "schema.graphql");
    const types = path.join(dir, "possibleTypes.json");
    const check = () => execFileSync("npm", ["run", "-s", "schema:check", "--", file], { cwd: ROOT, stdio: "pipe" }).toString();
    fs.writeFileSync(file, printSchemaSdl());
    fs.writeFileSync(types, printPossibleTypes(schema));
    expect(check()).toContain("up to date");
    fs.writeFileSync(file, printSchemaSdl().replace("type Run implements Node {", "type Run implements Node {\n  stale: Int"));
    expect(check).toThrow(/schema.graphql is stale/);
    fs.writeFileSync(file, printSchemaSdl());
    fs.writeFileSync(types, printPossibleTypes(schema).replace('"NotFoundError",', ""));
    expect(check).toThrow(/possibleTypes.json is stale/);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("keeps the contract's names", () => {
    const sdl = printSchemaSdl();
    for (const name of [
      "interface Node",
      "interface Error",
      "enum ErrorCode",
      "enum RunErrorCode",
      "type Conversation implements Node",
      "type Run implements Node",
      "union StartRunResult",
      "union ResumeRunResult",
      "union CancelRunResult",
      "union RenameConversationResult",
      "union DeleteConversationResult",
      "type RunConnection",
      "type ConversationConnection",
      "interface RunEvent",
      "type RunStatusEvent implements RunEvent",
      "type TokenEvent implements RunEvent",
    ]) {
      expect(sdl).toContain(name);
    }
  });

  it("has a field id only on Node types, except ids that name no Node (Relay keys its store by id)", () => {
    // Relay adds `id` to every selection on a type that has one and keys the
    // record by it: a non-Node type whose `id` held a Node's id would overwrite
    // that Node's record. Each exception holds an id of its own kind.
    const notNodeIds: Record<string, string> = {
      Message: "LangChain's message id",
      ToolCall: "the model's tool call id",
      Interrupt: "LangGraph's interrupt id, which resumeRun's responses name",
      Principal: "the caller's own id, which conversations record as their owner",
      GraphNode: "a graph node's name (never a UUID); two agents' nodes of one name hold the same fields, the name alone",
      WebhookDelivery: "the Standard Webhooks webhook-id (msg_…), a delivery's own; never a Node's",
    };
    const offenders: string[] = [];
    for (const type of Object.values(schema.getTypeMap())) {
      if (type.name.startsWith("__") || !(isObjectType(type) || isInterfaceType(type)) || !type.getFields().id) continue;
      const isNode = type.name === "Node" || type.getInterfaces().some((i) => i.name === "Node");
      if (!isNode && !(type.name in notNodeIds)) offenders.push(type.name);
    }
    expect(offenders).toEqual([]);
  });
});
