// GraphSettled tells when the graph's own run has ended: a stopped run waits for
// it before it reads the thread.
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { MemorySaver } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { GraphSettled } from "../src/agent/graph-settled.ts";

const turn = () => new Promise((resolve) => setTimeout(resolve, 20));

describe("GraphSettled", () => {
  it("waits while the graph runs and resolves when its root run ends", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let arrived!: () => void;
    const atGate = new Promise<void>((resolve) => (arrived = resolve));
    const graph = new StateGraph(MessagesAnnotation)
      .addNode("held", async () => {
        arrived();
        await gate;
        return {};
      })
      .addEdge(START, "held")
      .addEdge("held", END)
      .compile({ checkpointer: new MemorySaver() });
    const settled = new GraphSettled();
    const consumed = (async () => {
      for await (const _ of await graph.stream({ messages: [] }, { configurable: { thread_id: "t" }, callbacks: [settled] }));
    })();
    await atGate;
    let waited = false;
    const waiting = settled.wait(60_000).then(() => (waited = true));
    await turn();
    expect(waited).toBe(false);
    release();
    await consumed;
    await waiting;
    expect(waited).toBe(true);
  });

  it("does not wait for a graph that never started", async () => {
    const settled = new GraphSettled();
    await settled.wait(60_000);
  });
});
