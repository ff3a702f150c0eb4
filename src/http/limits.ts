// Every request and operation limit (with the checks on request bodies, strings
// and errors that go with them), gathered from the configuration into the
// options src/server.ts hands to yoga, the WebSocket server and graphql-ws. The
// operation limits are envelop plugins (parse, validate, execute, subscribe
// hooks), which WebSocket operations run through too; the byte limits are set
// once here for both transports.
import type { Plugin, YogaServerOptions } from "graphql-yoga";
import type { Config } from "../config.ts";
import type { Logger } from "../logger.ts";
import { useOperationLimits } from "../plugins/operation-limits.ts";
import { usePageSizeLimit } from "../plugins/page-size.ts";
import { createErrorMasking, useHiddenSuggestions } from "../plugins/errors.ts";
import { useJsonBodiesOnly } from "../plugins/content-type.ts";
import { useWellFormedStrings } from "../plugins/well-formed-strings.ts";
import { useSharedSubscriptionResults } from "../plugins/shared-subscription-results.ts";

export interface RequestLimits {
  /** Spread into createYoga's options. */
  yoga: Pick<YogaServerOptions<object, object>, "maxRequestBodySize" | "batching" | "multipart" | "maskedErrors"> & { plugins: Plugin[] };
  /** The WebSocket server's and graphql-ws's share. */
  webSocket: {
    /** For `new WebSocketServer({ maxPayload })`: a larger message closes the socket with 1009. */
    maxPayload: number;
    /** For graphql-ws `useServer({ connectionInitWaitTimeout })`: no connection_init by then closes with 4408. */
    connectionInitWaitTimeout: number;
  };
}

export function createRequestLimits(config: Pick<Config, "limits">, logger: Logger): RequestLimits {
  const { limits } = config;
  return {
    yoga: {
      // MAX_REQUEST_BYTES is enforced by useJsonBodiesOnly, at less cost than yoga's own limit.
      maxRequestBodySize: false,
      // One operation per request: a batch would multiply every per-operation limit.
      batching: false,
      // No uploads in this API, and a multipart form is a POST any web page can send.
      multipart: false,
      maskedErrors: createErrorMasking(logger),
      plugins: [
        useJsonBodiesOnly({ maxBytes: limits.requestBytes }),
        ...useOperationLimits(limits),
        usePageSizeLimit(limits.pageSize),
        useWellFormedStrings(),
        useSharedSubscriptionResults(),
        ...(limits.hideSuggestions ? [useHiddenSuggestions()] : []),
      ],
    },
    webSocket: {
      maxPayload: limits.requestBytes,
      connectionInitWaitTimeout: limits.wsInitTimeoutMs,
    },
  };
}
