// The documents of the state viewer, the graph and the edits (StateViewer.tsx,
// GraphView.tsx, EditState.tsx): a checkpoint's full state, an agent's graph,
// editState, and the head of a fork's thread. Their types are generated into
// generated.ts with the others (`npm run codegen`).
import type { Document } from "./documents.ts";
import type * as Types from "./generated.ts";

export const CHECKPOINT_STATE: Document<Types.ConsoleCheckpointStateQuery, Types.ConsoleCheckpointStateQueryVariables> = /* GraphQL */ `
  query ConsoleCheckpointState($id: ID!) {
    node(id: $id) {
      ... on Checkpoint {
        id step source next createdAt state metadata
        parent { id step }
        run { id kind }
        writes { taskId channel idx value }
      }
    }
  }
`;

export const AGENT_GRAPH: Document<Types.ConsoleAgentGraphQuery, Types.ConsoleAgentGraphQueryVariables> = /* GraphQL */ `
  query ConsoleAgentGraph {
    agents {
      name kind
      graph { nodes { id } edges { source target conditional } }
    }
  }
`;

export const EDIT_STATE: Document<Types.ConsoleEditStateMutation, Types.ConsoleEditStateMutationVariables> = /* GraphQL */ `
  mutation ConsoleEditState($checkpointId: ID!, $values: JSON!, $asNode: String) {
    editState(input: { checkpointId: $checkpointId, values: $values, asNode: $asNode }) {
      __typename
      ... on EditStateSuccess { run { id status kind input startedAt errorMessage } checkpoint { id next } }
      ... on Error { code message }
    }
  }
`;

/** The newest checkpoint of a conversation's thread (a fork's copy of the checkpoint it was made from). */
export const THREAD_HEAD: Document<Types.ConsoleThreadHeadQuery, Types.ConsoleThreadHeadQueryVariables> = /* GraphQL */ `
  query ConsoleThreadHead($id: ID!) {
    conversation(id: $id) {
      id
      checkpoints(last: 1) { edges { node { id } } }
    }
  }
`;
