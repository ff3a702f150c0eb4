// A typed client: urql with the documents graphql-codegen made from
// operations.graphql (codegen.ts). Every result below is typed from the schema,
// DateTime as string and JSON as JsonValue.
// #region readme:codegen
import type { Client } from "@urql/core";
import { ConversationDocument, FollowRunDocument, StartRunDocument, type JsonValue } from "./generated/graphql.ts";

export interface FollowedRun {
  conversationId: string;
  /** Milliseconds since the epoch: DateTime arrives as an ISO-8601 string. */
  startedAt: number;
  text: string;
  toolArgs: JsonValue[];
  status: string;
}

export async function startAndFollow(client: Client, message: string): Promise<FollowedRun> {
  const started = await client.mutation(StartRunDocument, { message }).toPromise();
  const result = started.data?.startRun;
  if (!result) throw started.error ?? new Error("no result");
  if (result.__typename !== "StartRunSuccess") throw new Error(`${result.code}: ${result.message}`);
  const startedAt = Date.parse(result.run.startedAt);

  let text = "";
  const toolArgs: JsonValue[] = [];
  const status = await new Promise<string>((resolve, reject) => {
    const { unsubscribe } = client.subscription(FollowRunDocument, { runId: result.run.id }).subscribe(({ data, error }) => {
      if (error || !data) return reject(error ?? new Error("no data"));
      const event = data.runEvents;
      if (event.__typename === "TokenEvent") text += event.text;
      if (event.__typename === "ToolCallEvent") toolArgs.push(event.args);
      if (event.__typename === "RunStatusEvent" && event.status !== "RUNNING") {
        unsubscribe();
        resolve(event.status);
      }
    });
  });

  const read = await client.query(ConversationDocument, { id: result.conversation.id }).toPromise();
  const createdAt: string | undefined = read.data?.conversation?.createdAt;
  if (createdAt === undefined || Date.parse(createdAt) > startedAt) throw new Error("the conversation was created after its first run started");
  return { conversationId: result.conversation.id, startedAt, text, toolArgs, status };
}
// #endregion readme:codegen
