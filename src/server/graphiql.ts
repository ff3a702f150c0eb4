// The document GraphiQL opens with: start a run, follow it, inspect it.
export const GRAPHIQL_DEFAULT_DOCUMENT = `# runledger: start a run, follow it, inspect it.
# 1. Run StartRun. Copy run.id and conversation.id from the answer.
# 2. Run FollowRun with {"runId": "<run id>"}: tokens stream, then the terminal status.
# 3. Run Inspect with {"id": "<conversation id>"}.

mutation StartRun {
  startRun(input: { message: "Please calculate 17 * 3" }) {
    __typename
    ... on StartRunSuccess { run { id status } conversation { id title } }
    ... on Error { code message }
  }
}

subscription FollowRun($runId: ID!) {
  runEvents(runId: $runId) {
    __typename
    seq
    ... on TokenEvent { text }
    ... on ToolCallEvent { name args }
    ... on ToolResultEvent { content }
    ... on RunStatusEvent { status errorCode errorMessage }
  }
}

query Inspect($id: ID!) {
  conversation(id: $id) {
    title messageCount next resumable
    messages { role content }
    runs { edges { node { id kind status errorCode startedAt finishedAt } } }
  }
}
`;
