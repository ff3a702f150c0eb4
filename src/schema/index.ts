// The schema: each module declares its types with their own query, mutation and
// subscription fields; refs.ts lets them point at each other without cycles.
import { lexicographicSortSchema, printSchema } from "graphql";
import { builder } from "./builder.ts";
import "./scalars.ts";
import "./enums.ts";
import "./errors.ts";
import "./node.ts";
import "./message.ts";
import "./usage.ts";
import "./principal.ts";
import "./agent.ts";
import "./interrupt.ts";
import "./tool-call.ts";
import "./message-node.ts";
import "./conversation.ts";
import "./run.ts";
import "./checkpoint.ts";
import "./edit-state.ts";
import "./events.ts";
import "./schedule.ts";
import "./webhook.ts";
import "./retention.ts";

builder.queryType({});
builder.mutationType({});

export const schema = builder.toSchema({ sortSchema: false });

/** The SDL committed as schema.graphql (types sorted, so diffs stay small). */
export function printSchemaSdl(): string {
  return printSchema(lexicographicSortSchema(schema)) + "\n";
}
