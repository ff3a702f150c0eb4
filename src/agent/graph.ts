// The agent: a LangGraph StateGraph over messages. START → agent; agent → tools
// when the last AI message asks for tools, else END; tools → agent.
import { SystemMessage, type AIMessage, type BaseMessage } from "@langchain/core/messages";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { StructuredToolInterface } from "@langchain/core/tools";
import type { BaseCheckpointSaver } from "@langchain/langgraph";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ToolNode } from "@langchain/langgraph/prebuilt";

export const AGENT_NODE = "agent";
export const TOOLS_NODE = "tools";

/** The one mapping between product and framework: a conversation id is a thread id. */
export function threadConfig(conversationId: string) {
  return { configurable: { thread_id: conversationId } };
}

export type CallModel = (messages: BaseMessage[], config: RunnableConfig) => Promise<BaseMessage>;

/** The model step: the tools bound, the system prompt prepended to every call and never written to the thread. */
export function modelCaller(model: BaseChatModel, tools: StructuredToolInterface[], systemPrompt: string): CallModel {
  const bound = model.bindTools!(tools);
  return (messages, config) => bound.invoke(systemPrompt ? [new SystemMessage(systemPrompt), ...messages] : messages, config);
}

export interface AgentGraphOptions {
  callModel: CallModel;
  tools: StructuredToolInterface[];
  checkpointer: BaseCheckpointSaver;
}

export function buildAgentGraph({ callModel, tools, checkpointer }: AgentGraphOptions) {
  async function agent(state: typeof MessagesAnnotation.State, config: RunnableConfig) {
    return { messages: [await callModel(state.messages, config)] };
  }

  function route(state: typeof MessagesAnnotation.State) {
    const last = state.messages.at(-1) as AIMessage | undefined;
    return last?.tool_calls?.length ? TOOLS_NODE : END;
  }

  return new StateGraph(MessagesAnnotation)
    .addNode(AGENT_NODE, agent)
    .addNode(TOOLS_NODE, new ToolNode(tools, { handleToolErrors: true }))
    .addEdge(START, AGENT_NODE)
    .addConditionalEdges(AGENT_NODE, route, [TOOLS_NODE, END])
    .addEdge(TOOLS_NODE, AGENT_NODE)
    .compile({ checkpointer });
}

export type AgentGraph = ReturnType<typeof buildAgentGraph>;
