// The floor for the token relay: the fake model's stream consumed directly by
// @langchain/ollama's ChatOllama, in the harness process, with no runledger in
// between. Whatever runledger adds is measured against this.
import { ChatOllama } from "@langchain/ollama";
import { HumanMessage } from "@langchain/core/messages";
import { nowMs } from "../../testkit/clock.ts";
import { planMessage, type StreamPlan } from "../../testkit/fake-ollama.ts";
import { newLog, noteToken, type TokenLog } from "./clients.ts";

export interface DirectStream {
  log: TokenLog;
  /** When stream() was called, on the shared clock. */
  startedAt: number;
}

export async function consumeDirect(modelUrl: string, plan: StreamPlan): Promise<DirectStream> {
  // One client per stream, as runledger does: an abort on a shared ChatOllama stops all its streams.
  const model = new ChatOllama({ baseUrl: modelUrl, model: "qwen3" });
  const log = newLog();
  const startedAt = nowMs();
  const stream = await model.stream([new HumanMessage(planMessage(plan))]);
  for await (const chunk of stream) {
    const receivedAt = nowMs();
    if (typeof chunk.content === "string" && chunk.content) noteToken(log, chunk.content, receivedAt);
  }
  log.finalStatus = "COMPLETED";
  return { log, startedAt };
}
