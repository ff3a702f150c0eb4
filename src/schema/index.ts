// The schema: each module declares its types with their own query, mutation and
// subscription fields.
import { lexicographicSortSchema, printSchema } from "graphql";
import { builder } from "./builder.ts";
import "./scalars.ts";
import "./errors.ts";
import "./node.ts";
import "./message.ts";
import "./conversation.ts";
import "./run.ts";
import { answerDeletedConversationsFromSnapshots } from "./events.ts";
import "./checkpoint.ts";

builder.queryType({});
builder.mutationType({});

export const schema = answerDeletedConversationsFromSnapshots(builder.toSchema({ sortSchema: false }));

/** The SDL committed as schema.graphql (types sorted, so diffs stay small). */
export function printSchemaSdl(): string {
  return printSchema(lexicographicSortSchema(schema)) + "\n";
}
