// Custom graph modules: loading a StateGraph (or a factory of one) from a
// TypeScript or JavaScript file, running it as runledger will (compiled with a
// checkpointer, the run's model in config.configurable.model, custom events and
// tokens streamed), and the one-line error for each wrong export.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { HumanMessage, isAIMessageChunk, type BaseMessage, type BaseMessageChunk } from "@langchain/core/messages";
import { MemorySaver, StateGraph } from "@langchain/langgraph";
import { ChatOllama } from "@langchain/ollama";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../src/config.ts";
import { loadAgentDefinitions } from "../src/agent/agent-file.ts";
import { loadGraphModule, type AnyStateGraph } from "../src/agent/graph-module.ts";
import { loadAgentGraphs } from "../src/agent/kinds/index.ts";
import type { AgentGraph } from "../src/agent/kinds/kind.ts";
import { startFakeOllama, type FakeOllama } from "../testkit/fake-ollama.ts";
import { graphModuleLayout } from "../testkit/graph-layout.ts";
import { PROCESS_TEST_TIMEOUT_MS, tempDatabaseUrl, trackedServerProcesses, waitForRun } from "../testkit/app.ts";
import { gqlOk } from "../testkit/graphql.ts";
import { CONVERSATION, START_AGENT_RUN } from "../testkit/documents.ts";

const TWO_NODE = fileURLToPath(new URL("./fixtures/graphs/two-node.ts", import.meta.url));
const ECHO = fileURLToPath(new URL("./fixtures/graphs/echo.mjs", import.meta.url));
const WRONG = fileURLToPath(new URL("./fixtures/graphs/wrong.ts", import.meta.url));
const BROKEN = fileURLToPath(new URL("./fixtures/graphs/broken.ts", import.meta.url));

let ollama: FakeOllama;
beforeAll(async () => {
  ollama = await startFakeOllama({ models: ["tiny"], responder: () => ({ kind: "text", tokens: ["Paris ", "is ", "the ", "capital."] }) });
});
afterAll(() => ollama.close());

/** Runs a loaded graph (a module's, or an agent's as start-up made it) the way runledger will: compiled with a checkpointer, the run's model in configurable. */
async function runGraph(graph: AnyStateGraph | AgentGraph, threadId: string, text: string) {
  const compiled = graph instanceof StateGraph ? graph.compile({ checkpointer: new MemorySaver() }) : graph.compile(new MemorySaver());
  const model = new ChatOllama({ baseUrl: ollama.url, model: "tiny" });
  const custom: unknown[] = [];
  const tokens: { text: string; node: unknown }[] = [];
  const stream = await compiled.stream(
    { messages: [new HumanMessage(text)] },
    { configurable: { thread_id: threadId, model }, streamMode: ["custom", "messages"], recursionLimit: 10 },
  );
  for await (const [mode, payload] of stream as AsyncIterable<[string, unknown]>) {
    if (mode === "custom") custom.push(payload);
    if (mode === "messages") {
      const [chunk, meta] = payload as [BaseMessageChunk, { langgraph_node?: unknown }];
      if (isAIMessageChunk(chunk) && typeof chunk.content === "string" && chunk.content) tokens.push({ text: chunk.content, node: meta.langgraph_node });
    }
  }
  const state = await compiled.getState({ configurable: { thread_id: threadId } });
  return { custom, tokens, messages: (state.values as { messages: BaseMessage[] }).messages };
}

describe("loading a graph module", () => {
  it.each([
    ["graph", "an uncompiled StateGraph"],
    ["default", "the default export"],
    ["makeGraph", "a factory"],
    ["makeGraphLater", "an async factory"],
  ])("takes the export %s (%s) and returns the uncompiled StateGraph, which streams custom events and tokens", async (exportName) => {
    const graph = await loadGraphModule(TWO_NODE, exportName);
    expect(graph).toBeInstanceOf(StateGraph);
    const before = ollama.requests.length;

    const { custom, tokens, messages } = await runGraph(graph, `thread-${exportName}`, "What is the capital of France?");
    expect(custom).toEqual([{ name: "plan", data: { steps: ["read the question", "answer it briefly"], question: "What is the capital of France?" } }]);
    expect(tokens).toEqual(["Paris ", "is ", "the ", "capital."].map((text) => ({ text, node: "answer" })));
    expect(messages.map((m) => [m.getType(), m.content])).toEqual([
      ["human", "What is the capital of France?"],
      ["ai", "Paris is the capital."],
    ]);
    // The model the node used is the one passed in configurable (a real ChatOllama talking NDJSON).
    expect(ollama.requests.length).toBe(before + 1);
    expect(ollama.requests.at(-1)).toMatchObject({
      model: "tiny",
      messages: [
        { role: "system", content: "Answer in one short sentence." },
        { role: "user", content: "What is the capital of France?" },
      ],
    });
  });

  it("loads a JavaScript module's default export", async () => {
    const graph = await loadGraphModule(ECHO);
    const { messages, custom } = await runGraph(graph, "thread-echo", "hello");
    expect(custom).toEqual([]);
    expect(messages.at(-1)?.content).toBe("echo: hello");
  });

  it("returns a graph each run can compile again with its own checkpointer", async () => {
    const graph = await loadGraphModule(TWO_NODE, "graph");
    const first = await runGraph(graph, "again-1", "one");
    const second = await runGraph(graph, "again-2", "two");
    expect([first.messages.length, second.messages.length]).toEqual([2, 2]);
  });
});

describe("a wrong export is one line naming the module and the export", () => {
  const cases: [string, string][] = [
    [
      "nope",
      "not exported (the module exports: compiled, neverReturns, noEntry, noMessages, notAGraph, plainObject, rejects, returnsCompiled, returnsNothing, throwing)",
    ],
    ["compiled", "it is a compiled graph; export the StateGraph itself (or a function returning it): runledger compiles it with its own checkpointer"],
    [
      "returnsCompiled",
      "returnsCompiled() returned a compiled graph; export the StateGraph itself (or a function returning it): runledger compiles it with its own checkpointer",
    ],
    ["notAGraph", "it is a number, not a LangGraph StateGraph"],
    ["plainObject", "it is a plain object, not a LangGraph StateGraph"],
    ["returnsNothing", "returnsNothing() returned undefined, not a LangGraph StateGraph"],
    ["throwing", "throwing() threw: GRAPH_API_KEY is not set"],
    ["rejects", "rejects() threw: TypeError: cannot read the prompt file"],
    ["noMessages", "the graph's state has no \"messages\" channel; runs start with {messages: [the user's message]} (build the state on MessagesAnnotation)"],
    ["noEntry", "the graph is invalid: UnreachableNodeError: Node `lonely` is not reachable."],
  ];
  it.each(cases)("export %s", async (exportName, problem) => {
    const error = await loadGraphModule(WRONG, exportName).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toBe(`graph module ${WRONG} export "${exportName}": ${problem}`);
  });

  it("a factory that never returns", async () => {
    await expect(loadGraphModule(WRONG, "neverReturns", { factoryTimeoutMs: 50 })).rejects.toThrow(
      new ConfigError(`graph module ${WRONG} export "neverReturns": neverReturns() did not return within 50 ms`),
    );
  });

  it("a module that throws while it is imported, and one that does not exist", async () => {
    await expect(loadGraphModule(BROKEN, "graph")).rejects.toThrow(
      new ConfigError(`graph module ${BROKEN} export "graph": the module cannot be imported: RESEARCH_INDEX is not set`),
    );
    const missing = path.join(path.dirname(BROKEN), "missing.ts");
    const error = (await loadGraphModule(missing).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toMatch(
      new RegExp(`^graph module ${missing.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} export "default": the module cannot be imported: .*missing\\.ts`),
    );
    expect(error.message).not.toContain("\n");
  });
});

describe("graph agents from a config file", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "runledger-graphs-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const defaults = { model: "tiny", think: undefined, systemPrompt: "", recursionLimit: 25 };

  function agentsFrom(agents: Record<string, unknown>) {
    writeFileSync(path.join(dir, "agents.json"), JSON.stringify({ agents: { default: { type: "chat" }, ...agents } }, null, 2));
    return loadAgentDefinitions("./agents.json", defaults, { cwd: dir });
  }

  it("loads every graph agent's module, by path relative to the file, with every agent's graph", async () => {
    const definitions = agentsFrom({
      research: { type: "graph", module: path.relative(dir, TWO_NODE), export: "makeGraph" },
      echo: { type: "graph", module: path.relative(dir, ECHO) },
    });
    const graphs = await loadAgentGraphs(definitions);
    expect([...graphs.keys()]).toEqual(["default", "research", "echo"]);
    const { tokens } = await runGraph(graphs.get("research")!, "from-config", "Capital?");
    expect(tokens.map((t) => t.text).join("")).toBe("Paris is the capital.");
  });

  it("a wrong export stops start-up with the agent's place in the file", async () => {
    const relative = path.relative(dir, TWO_NODE);
    const definitions = agentsFrom({ research: { type: "graph", module: relative, export: "makeGraf" } });
    await expect(loadAgentGraphs(definitions)).rejects.toThrow(
      new ConfigError(
        `RUNLEDGER_CONFIG ./agents.json: agents.research: graph module ${relative} export "makeGraf": not exported (the module exports: default, graph, makeGraph, makeGraphLater)`,
      ),
    );
  });
});

describe("graph modules beside the config file, in folders that are no ES module package (npm start)", () => {
  const startServer = trackedServerProcesses();

  it(
    "loads them as ES modules, with the LangGraph runledger uses, and runs them",
    async () => {
      const layout = graphModuleLayout();
      const db = tempDatabaseUrl();
      try {
        const config = layout.config({
          research: { type: "graph", module: "graphs/research.ts", export: "graph" },
          split: { type: "graph", module: "graphs/split.ts" },
          echo: { type: "graph", module: "legacy/graphs/echo.js" },
        });
        const server = await startServer({ RUNLEDGER_CONFIG: config, DATABASE_URL: db.url, OLLAMA_HOST: ollama.url, OLLAMA_MODEL: "tiny" });
        for (const [agent, message, reply] of [
          ["research", "Capital of France?", "Paris is the capital."],
          ["split", "Capital of France?", "Paris is the capital."],
          ["echo", "hello", "echo: hello"],
        ] as const) {
          const { startRun } = await gqlOk(server.url, START_AGENT_RUN, { message, agent });
          expect(startRun.__typename).toBe("StartRunSuccess");
          expect((await waitForRun(server.url, startRun.run.id)).status).toBe("COMPLETED");
          const { conversation } = await gqlOk(server.url, CONVERSATION, { id: startRun.conversation.id });
          expect(conversation.messages.at(-1).content).toBe(reply);
        }
        expect(await server.stop()).toBe(0);
      } finally {
        db.remove();
        layout.remove();
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
