// The GraphQL documents a chat page may do without: the lists (conversations,
// checkpoints) and the branching mutations (fork, edit). They are apart from
// documents.ts because a bundler keeps a template string with substitutions
// even when nothing uses it: here, they leave a page's bundle with the module.
import { CONVERSATION_ROW, MESSAGE, REFUSAL, RUN, type Document } from "./documents.js";
import type * as Types from "./generated.js";

const CHECKPOINT = /* GraphQL */ `
  fragment RunledgerCheckpoint on Checkpoint {
    id createdAt step source next messageCount
    parent { id }
    lastMessage { ...RunledgerMessage }
    run { id kind status }
  }
`;

/**
 * A page of a conversation's checkpoints, oldest first (the API's order;
 * cursors are checkpoint ids, which stay valid as checkpoints arrive):
 * `last` (before `before`) for the newest or an older page, `first` after
 * `after` (and before `before`) for what came since.
 */
export const CHECKPOINTS: Document<Types.RunledgerCheckpointsQuery, Types.RunledgerCheckpointsQueryVariables> = /* GraphQL */ `
  query RunledgerCheckpoints($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {
    conversation(id: $id) {
      id
      checkpoints(first: $first, after: $after, last: $last, before: $before) {
        edges { node { ...RunledgerCheckpoint } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      }
    }
  }
  ${CHECKPOINT}
  ${MESSAGE}
`;

/** The message a checkpoint ends on: what edit({message}) replaces. */
export const CHECKPOINT_MESSAGE: Document<Types.RunledgerCheckpointMessageQuery, Types.RunledgerCheckpointMessageQueryVariables> = /* GraphQL */ `
  query RunledgerCheckpointMessage($id: ID!) {
    node(id: $id) { ... on Checkpoint { id lastMessage { id role } } }
  }
`;

/** A page of the caller's conversations, newest updatedAt first (an admin's: everyone's, or one owner's). */
export const CONVERSATIONS: Document<Types.RunledgerConversationsQuery, Types.RunledgerConversationsQueryVariables> = /* GraphQL */ `
  query RunledgerConversations($first: Int, $after: String, $owner: String) {
    conversations(first: $first, after: $after, owner: $owner) {
      edges { node { ...RunledgerConversationRow } }
      pageInfo { hasNextPage endCursor }
    }
  }
  ${CONVERSATION_ROW}
`;

export const FORK_CONVERSATION: Document<Types.RunledgerForkConversationMutation, Types.RunledgerForkConversationMutationVariables> = /* GraphQL */ `
  mutation RunledgerForkConversation($input: ForkConversationInput!) {
    forkConversation(input: $input) {
      __typename
      ... on ForkConversationSuccess { conversation { id title } run { ...RunledgerRun } }
      ...RunledgerRefusal
    }
  }
  ${RUN}
  ${REFUSAL}
`;

export const EDIT_STATE: Document<Types.RunledgerEditStateMutation, Types.RunledgerEditStateMutationVariables> = /* GraphQL */ `
  mutation RunledgerEditState($input: EditStateInput!) {
    editState(input: $input) {
      __typename
      ... on EditStateSuccess { run { ...RunledgerRun } checkpoint { id next } }
      ...RunledgerRefusal
    }
  }
  ${RUN}
  ${REFUSAL}
`;
