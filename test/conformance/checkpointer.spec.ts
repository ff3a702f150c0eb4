// LangGraph's own checkpointer conformance suite (@langchain/langgraph-checkpoint-validation)
// on each backend's saver as runledger opens it: the SQLite saver with its cached
// statements and write gate, the PostgreSQL saver with its unique string versions.
//
// The SQLite saver runs under SqliteSaver's own name, so the suite applies the one
// exception its authors made for it: SqliteSaver stores every channel value in each
// checkpoint rather than only the changed ones (the suite marks that check skipped,
// "SQLiteSaver doesn't store channel deltas"). The last test holds that format,
// which the SQLite checkpoint reads depend on.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { validate } from "@langchain/langgraph-checkpoint-validation";
import { emptyCheckpoint, uuid6, type BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { storageBackends, sqliteBackend, type TestStorage } from "./backends.ts";

// The suite is written for Jest-style globals; this project's vitest has none.
Object.assign(globalThis, { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it });

const UPSTREAM_NAMES: Record<string, string> = { sqlite: "@langchain/langgraph-checkpoint-sqlite" };

for (const backend of storageBackends) {
  const open = new Map<BaseCheckpointSaver, TestStorage>();
  validate({
    checkpointerName: UPSTREAM_NAMES[backend.name] ?? `runledger ${backend.name}`,
    beforeAllTimeout: 60_000,
    async createCheckpointer() {
      const test = await backend.open();
      open.set(test.storage.saver, test);
      return test.storage.saver;
    },
    async destroyCheckpointer(saver) {
      await open.get(saver)?.close();
      open.delete(saver);
    },
  });
}

describe("the SQLite saver's format", () => {
  it("stores every channel value in each checkpoint, whatever changed, as SqliteSaver does", async () => {
    const test = await sqliteBackend.open();
    try {
      const saver = test.storage.saver;
      const config = { configurable: { thread_id: "format", checkpoint_ns: "" } };
      const checkpoint = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { foo: "bar", baz: "qux" }, channel_versions: { foo: 1, baz: 1 } };
      const stored = await saver.put(config, checkpoint, { source: "loop", step: 0, parents: {} }, { foo: 1 });
      expect((await saver.getTuple(stored))?.checkpoint.channel_values).toEqual({ foo: "bar", baz: "qux" });
    } finally {
      await test.close();
    }
  });
});
