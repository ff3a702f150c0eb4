// The peer's agent, for LangGraph's own server (langgraph dev): the same
// two-node graph runledger runs (src/agent/graph.ts). START → agent; agent →
// tools when the last AI message asks for tools, else END; tools → agent. The
// model is ChatOllama bound to the same two tools, with a system prompt
// prepended to every call and never written to the thread.
//
// The installer copies this file into the peer's own folder, so it resolves
// @langchain/* from the peer's install (the server's copies), not the project's.
import { ChatOllama } from "@langchain/ollama";
import { SystemMessage, type AIMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { tool } from "@langchain/core/tools";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { z } from "zod";

const SYSTEM_PROMPT = "You are a helpful assistant. Use the calculator tool for arithmetic and the current_time tool for the date or time.";

// A small evaluator for + - * / and parentheses: the tool must exist and be bound
// (its schema goes to the model with every call), but the fake model never calls it.
function evaluate(expression: string): number {
  const src = expression.replace(/\s+/g, "");
  let pos = 0;
  const num = (): number => {
    if (src[pos] === "(") {
      pos++;
      const v = sum();
      pos++;
      return v;
    }
    if (src[pos] === "-") {
      pos++;
      return -num();
    }
    const m = /^\d+(\.\d+)?/.exec(src.slice(pos));
    if (!m) throw new Error(`unexpected "${src[pos] ?? "end"}" at ${pos + 1}`);
    pos += m[0].length;
    return Number(m[0]);
  };
  const product = (): number => {
    let v = num();
    while (src[pos] === "*" || src[pos] === "/") v = src[pos++] === "*" ? v * num() : v / num();
    return v;
  };
  const sum = (): number => {
    let v = product();
    while (src[pos] === "+" || src[pos] === "-") v = src[pos++] === "+" ? v + product() : v - product();
    return v;
  };
  const value = sum();
  if (pos !== src.length) throw new Error(`unexpected "${src[pos]}" at ${pos + 1}`);
  return value;
}

const tools = [
  tool(async ({ expression }) => String(evaluate(expression)), {
    name: "calculator",
    description: "Evaluates an arithmetic expression with + - * / % ^ and parentheses, for example (17 + 4) * 2.",
    schema: z.object({ expression: z.string().describe("the arithmetic expression") }),
  }),
  tool(async () => new Date().toISOString(), {
    name: "current_time",
    description: "Returns the current date and time, in UTC or in the given IANA time zone.",
    schema: z.object({ timeZone: z.string().optional().describe("an IANA time zone such as Europe/Paris") }),
  }),
];

const model = new ChatOllama({
  baseUrl: process.env.OLLAMA_HOST ?? "http://127.0.0.1:11434",
  model: process.env.OLLAMA_MODEL ?? "qwen3",
}).bindTools(tools);

async function agent(state: typeof MessagesAnnotation.State, config: RunnableConfig) {
  return { messages: [await model.invoke([new SystemMessage(SYSTEM_PROMPT), ...state.messages], config)] };
}

function route(state: typeof MessagesAnnotation.State) {
  const last = state.messages.at(-1) as AIMessage | undefined;
  return last?.tool_calls?.length ? "tools" : END;
}

export const graph = new StateGraph(MessagesAnnotation)
  .addNode("agent", agent)
  .addNode("tools", new ToolNode(tools, { handleToolErrors: true }))
  .addEdge(START, "agent")
  .addConditionalEdges("agent", route, ["tools", END])
  .addEdge("tools", "agent")
  .compile();
