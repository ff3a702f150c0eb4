// GraphQL's share of /metrics: operations by type, root field and outcome, with
// their duration; live subscriptions over SSE (the WebSocket endpoint counts its
// own); subscriptions cut off as too slow. The root field, unlike the operation
// name a client chooses, is one of the schema's: a bounded label.
import { getOperationAST, type DocumentNode, type ExecutionResult } from "graphql";
import { isAsyncIterable, type Plugin } from "graphql-yoga";
import type { Metrics } from "../../telemetry/metrics.ts";

function describe(document: DocumentNode, operationName: string | null | undefined): { type: string; field: string } {
  const operation = getOperationAST(document, operationName);
  const first = operation?.selectionSet.selections[0];
  return { type: operation?.operation ?? "unknown", field: first?.kind === "Field" ? first.name.value : "unknown" };
}

function tooSlow(result: ExecutionResult): boolean {
  return result.errors?.some((e) => e.extensions?.code === "SUBSCRIBER_TOO_SLOW") ?? false;
}

/** `overWebSocket`: whether an operation's context came from graphql-ws (counted by the WebSocket endpoint). */
export function useOperationMetrics(metrics: Metrics, overWebSocket: (operationContext: unknown) => boolean): Plugin {
  let sse = 0;
  metrics.setSubscriptionsSource("sse", () => sse);
  return {
    onExecute({ args }) {
      const { type, field } = describe(args.document, args.operationName);
      const started = performance.now();
      return {
        onExecuteDone({ result }) {
          if (isAsyncIterable(result)) return;
          metrics.graphqlOperations.inc({ type, field, outcome: result.errors?.length ? "error" : "ok" });
          metrics.graphqlDuration.observe({ type, field }, (performance.now() - started) / 1000);
        },
      };
    },
    onSubscribe({ args }) {
      const { field } = describe(args.document, args.operationName);
      const counted = !overWebSocket(args.contextValue);
      return {
        onSubscribeResult({ result }) {
          if (!isAsyncIterable(result)) {
            metrics.graphqlOperations.inc({ type: "subscription", field, outcome: "error" });
            return;
          }
          metrics.graphqlOperations.inc({ type: "subscription", field, outcome: "ok" });
          if (counted) sse += 1;
          let ended = false;
          return {
            onNext({ result: next }) {
              if (tooSlow(next)) metrics.subscribersCutOff.inc();
            },
            onEnd() {
              if (counted && !ended) sse -= 1;
              ended = true;
            },
          };
        },
      };
    },
  };
}
