// The framework floor: a one-node LangGraph StateGraph around ChatOllama,
// streamed with the modes runledger uses (messages and updates), with an
// in-memory checkpointer. What LangGraph costs per token before runledger adds
// anything (no database, no events, no GraphQL).
import { ChatOllama } from "@langchain/ollama";
import { HumanMessage, isAIMessageChunk, type BaseMessage, type BaseMessageChunk } from "@langchain/core/messages";
import { MemorySaver, MessagesAnnotation, StateGraph, START, END } from "@langchain/langgraph";
import { randomUUID } from "node:crypto";
import { nowMs } from "../../testkit/clock.ts";
import { newLog, noteToken, type TokenLog } from "./clients.ts";
import { planMessage, type StreamPlan } from "../../testkit/fake-ollama.ts";

export async function consumeThroughLangGraph(modelUrl: string, plan: StreamPlan): Promise<TokenLog> {
  const model = new ChatOllama({ baseUrl: modelUrl, model: "qwen3" });
  const graph = new StateGraph(MessagesAnnotation)
    .addNode("agent", async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addEdge(START, "agent")
    .addEdge("agent", END)
    .compile({ checkpointer: new MemorySaver() });
  const log = newLog();
  const stream = await graph.stream(
    { messages: [new HumanMessage(planMessage(plan))] },
    { configurable: { thread_id: randomUUID() }, streamMode: ["messages", "updates"] },
  );
  for await (const [mode, payload] of stream as AsyncIterable<[string, unknown]>) {
    if (mode !== "messages") continue;
    const receivedAt = nowMs();
    const [chunk] = payload as [BaseMessage];
    if (isAIMessageChunk(chunk as BaseMessageChunk) && typeof chunk.content === "string" && chunk.content) noteToken(log, chunk.content, receivedAt);
  }
  log.finalStatus = "COMPLETED";
  return log;
}
