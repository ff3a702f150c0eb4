// GraphiQL at GET /graphql (a browser asking for text/html): what it opens
// with, and how its page is served.
//
// The page is yoga's, with GraphiQL's scripts and styles inlined so it works
// without a CDN: about 9 MB. It is rendered once, on the first request, in a
// worker thread: the package that renders it holds its scripts as one string
// (32 MB of heap once imported), which then goes with the worker instead of
// staying in the server's heap for good. It is then served like any static
// file (static-files.ts): compressed once per encoding a browser asks for,
// revalidated by ETag.
import { Worker } from "node:worker_threads";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { GraphiQLOptions } from "graphql-yoga";
import { sendStaticFile, staticFile, type StaticFile } from "./static-files.ts";

/** The tabs GraphiQL opens with (until the browser has tabs of its own saved): start a run, follow it, inspect it. */
export const GRAPHIQL_TABS: { query: string; variables: string }[] = [
  {
    query: `# 1. Run StartRun (▶): a new conversation, titled
#    after the message. Copy run.id for the FollowRun
#    tab, conversation.id for the Inspect tab. To go on
#    with a conversation, set "conversationId" in the
#    variables.
mutation StartRun(
  $message: String! = "Please calculate 17 * 3"
  $conversationId: ID
) {
  startRun(
    input: { message: $message, conversationId: $conversationId }
  ) {
    __typename
    ... on StartRunSuccess {
      run { id status }
      conversation { id title }
    }
    ... on Error { code message }
  }
}
`,
    variables: JSON.stringify({ message: "Please calculate 17 * 3" }, null, 2),
  },
  {
    query: `# 2. Paste run.id into the variables ("runId") and
#    run FollowRun. Each event shows as it arrives over
#    the WebSocket: RUNNING, tokens, tool calls and
#    results, checkpoints, then the final status, and
#    the subscription completes. A finished run replays
#    its events; "after": n skips those up to seq n.
subscription FollowRun($runId: ID!, $after: Int) {
  runEvents(runId: $runId, after: $after) {
    __typename
    seq
    ... on TokenEvent { text }
    ... on ToolCallEvent { name args }
    ... on ToolResultEvent { name content isError }
    ... on CheckpointEvent { checkpointId }
    ... on RunStatusEvent { status errorCode errorMessage }
  }
}
`,
    variables: JSON.stringify({ runId: "paste run.id from StartRun" }, null, 2),
  },
  {
    query: `# 3. Paste conversation.id into the variables ("id")
#    and run Inspect: messages and next come from the
#    latest LangGraph checkpoint, each run says what the
#    user was told, each checkpoint names its run. After
#    a failure next is non-empty and resumable true:
#    ResumeRun continues the pending step.
query Inspect($id: ID!) {
  conversation(id: $id) {
    title messageCount next resumable
    messages { role content toolCalls { name args } }
    runs(first: 20) {
      edges { node { id kind status errorCode errorMessage startedAt finishedAt } }
    }
    checkpoints(last: 20) {
      edges { node { id step source next run { id } } }
    }
  }
}

mutation ResumeRun($id: ID!) {
  resumeRun(input: { conversationId: $id }) {
    __typename
    ... on ResumeRunSuccess { run { id kind status } }
    ... on Error { code message }
  }
}
`,
    variables: JSON.stringify({ id: "paste conversation.id from StartRun" }, null, 2),
  },
];

/** What GraphiQL opens a new tab with: every operation of the tabs, in one document. */
export const GRAPHIQL_DEFAULT_DOCUMENT = GRAPHIQL_TABS.map((tab) => tab.query).join("\n");

/**
 * What yoga renders GraphiQL with. GraphiQL fills the variables editor of the
 * tab it opens on from `variables` (yoga passes it on as initialVariables; its
 * type does not list it), not from that tab's own variables; the other tabs
 * bring theirs when chosen.
 */
const graphiqlOptions = {
  subscriptionsProtocol: "WS" as const,
  defaultQuery: GRAPHIQL_DEFAULT_DOCUMENT,
  defaultTabs: GRAPHIQL_TABS,
  variables: GRAPHIQL_TABS[0]!.variables,
  defaultEditorToolsVisibility: "variables" as const,
  title: "runledger",
};
export const GRAPHIQL_OPTIONS: GraphiQLOptions = graphiqlOptions;

/** The requests yoga answers with GraphiQL: a GET whose Accept names text/html. */
export function isGraphiQLRequest(req: IncomingMessage, pathname: string): boolean {
  return pathname === "/graphql" && req.method === "GET" && (req.headers.accept ?? "").includes("text/html");
}

/** Renders in a worker what @graphql-yoga/render-graphiql's renderGraphiQL renders; yoga's `renderGraphiQL` option. */
export function renderGraphiQLInWorker(options: GraphiQLOptions): Promise<string> {
  const worker = new Worker(
    `const { parentPort, workerData } = require("node:worker_threads");
     import(workerData.module).then(({ renderGraphiQL }) => parentPort.postMessage(renderGraphiQL(workerData.options)));`,
    { eval: true, workerData: { module: import.meta.resolve("@graphql-yoga/render-graphiql"), options } },
  );
  return new Promise<string>((resolve, reject) => {
    worker.once("message", (page: string) => {
      resolve(page);
      void worker.terminate();
    });
    worker.once("error", reject);
    worker.once("exit", (code) => reject(new Error(`the GraphiQL page's worker exited with code ${code} before rendering it`)));
  });
}

// Brotli's top quality takes about 18 s of CPU on this page; 9 takes one and
// loses 8% in size.
const BROTLI_QUALITY = 9;

/**
 * Serves the GraphiQL page compressed. `render` produces yoga's page (a Response
 * to a GET of /graphql asking for HTML); it is called once.
 */
export function graphiqlRoute(render: () => Promise<Response>): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  let page: Promise<StaticFile> | undefined;
  const load = () => {
    page ??= (async () => {
      const response = await render();
      if (!response.ok) throw new Error(`GraphiQL page: HTTP ${response.status}`);
      const bytes = Buffer.from(await response.arrayBuffer());
      const contentType = response.headers.get("content-type") ?? "text/html; charset=utf-8";
      return staticFile(bytes, { contentType, cacheControl: "no-cache", brotliQuality: BROTLI_QUALITY });
    })().catch((error: unknown) => {
      page = undefined;
      throw error;
    });
    return page;
  };

  return async (req, res) => {
    if (!isGraphiQLRequest(req, (req.url ?? "/").split("?")[0]!)) return false;
    await sendStaticFile(req, res, await load());
    return true;
  };
}
