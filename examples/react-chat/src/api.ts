// The two reads the SDK's stores leave to the app, sent through the client's
// own transport (its credential included): the agents a new conversation may
// use, and a thread's checkpoints, to fork from or to edit at.
import type { RunledgerClient } from "@runledger/client";

export interface Agent {
  name: string;
  description: string;
}

export interface Checkpoint {
  id: string;
  step: number;
  source: "INPUT" | "LOOP" | "UPDATE" | "FORK";
  next: string[];
  lastMessage: { id: string; role: string; content: string } | null;
}

async function read<T>(client: RunledgerClient, query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const result = await client.transport.request<T>({ query, variables });
  if (result.errors?.length || !result.data) throw new Error(result.errors?.[0]?.message ?? "no data");
  return result.data;
}

export async function listAgents(client: RunledgerClient): Promise<Agent[]> {
  return (await read<{ agents: Agent[] }>(client, "query ExampleAgents { agents { name description } }")).agents;
}

const CHECKPOINTS = /* GraphQL */ `
  query ExampleCheckpoints($id: ID!) {
    conversation(id: $id) {
      checkpoints(last: 100) { edges { node { id step source next lastMessage { id role content } } } }
    }
  }
`;

/** The thread's latest checkpoints, oldest first. */
export async function listCheckpoints(client: RunledgerClient, conversationId: string): Promise<Checkpoint[]> {
  const data = await read<{ conversation: { checkpoints: { edges: { node: Checkpoint }[] } } | null }>(client, CHECKPOINTS, { id: conversationId });
  return data.conversation?.checkpoints.edges.map((edge) => edge.node) ?? [];
}

/** The checkpoint that added a message: the oldest whose last message it is. */
export async function checkpointAdding(client: RunledgerClient, conversationId: string, messageId: string): Promise<string | null> {
  return (await listCheckpoints(client, conversationId)).find((c) => c.lastMessage?.id === messageId)?.id ?? null;
}
