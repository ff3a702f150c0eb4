// Fan-out without repeated work: every subscriber of a run receives the same
// event object from the bus, and subscribers that sent the same document and
// variables would compute the same result from it. This plugin executes each
// (event, operation) pair once and hands the result to all of them; serializing
// and sending stay per subscriber.
//
// The precondition: an event's result depends only on the event, the document,
// the variables and who subscribed (what a principal may see), never on anything
// else of the subscriber's. So results are shared per principal: the shared
// execution runs with a context of its own (`sharedContext`, built for the
// subscriber's principal), never a subscriber's, so no resolver can read other
// per-subscriber state even by mistake (test/shared-subscription-results.spec.ts).
import { createSourceEventStream, execute, type DocumentNode, type ExecutionArgs, type ExecutionResult } from "graphql";
import type { Plugin } from "graphql-yoga";
import type { Principal } from "../../domain/principal.ts";

/** The principal the subscriber's context carries (src/context.ts). */
function principalOfContext(context: unknown): Principal {
  const principal = (context as { principal?: Principal } | null)?.principal;
  if (!principal) throw new Error("a subscription's context carries no principal");
  return principal;
}

type Result = ExecutionResult | Promise<ExecutionResult>;

export interface SharedSubscriptionResultsOptions {
  /** The context an event's shared execution runs with: built from the services and the principal only, once per event, operation and principal. */
  sharedContext: (principal: Principal) => unknown;
}

export function useSharedSubscriptionResults({ sharedContext }: SharedSubscriptionResultsOptions): Plugin {
  // Weak keys: an event's results go when the event does; a document's id when the document does.
  const resultsByEvent = new WeakMap<object, Map<string, Result>>();
  const documentIds = new WeakMap<DocumentNode, number>();
  let nextDocumentId = 1;

  const operationKey = (args: ExecutionArgs): string => {
    let id = documentIds.get(args.document);
    if (id === undefined) {
      id = nextDocumentId++;
      documentIds.set(args.document, id);
    }
    const { role, id: who } = principalOfContext(args.contextValue);
    return `${id}\u0000${args.operationName ?? ""}\u0000${JSON.stringify(args.variableValues ?? {})}\u0000${role}\u0000${who}`;
  };

  const executeShared = (args: ExecutionArgs, key: string, event: unknown): Result => {
    if (event === null || typeof event !== "object")
      return execute({ ...args, rootValue: event, contextValue: sharedContext(principalOfContext(args.contextValue)) });
    let results = resultsByEvent.get(event);
    if (!results) {
      results = new Map();
      resultsByEvent.set(event, results);
    }
    let result = results.get(key);
    if (!result) {
      result = execute({ ...args, rootValue: event, contextValue: sharedContext(principalOfContext(args.contextValue)) });
      results.set(key, result);
    }
    return result;
  };

  return {
    onSubscribe({ subscribeFn, setSubscribeFn }) {
      setSubscribeFn(async (args) => {
        const source = await createSourceEventStream(args as ExecutionArgs);
        // No stream (bad variables, a refused subscription): the default subscribe
        // reports it, so errors and HTTP statuses stay exactly as without this plugin.
        if (!isAsyncIterable(source)) return subscribeFn(args);
        const key = operationKey(args as ExecutionArgs);
        return mapAsyncIterable(source, (event) => executeShared(args as ExecutionArgs, key, event));
      });
    },
  };
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof (value as AsyncIterable<unknown> | null)?.[Symbol.asyncIterator] === "function";
}

/** Maps each item; return() and throw() reach the source at once, so its listener is released. */
function mapAsyncIterable<T, U>(source: AsyncIterable<T>, map: (item: T) => U | Promise<U>): AsyncIterableIterator<U> {
  const iterator = source[Symbol.asyncIterator]();
  const done = { value: undefined, done: true } as IteratorResult<U>;
  const mapped: AsyncIterableIterator<U> = {
    async next() {
      const item = await iterator.next();
      return item.done ? done : { value: await map(item.value), done: false };
    },
    async return() {
      await iterator.return?.();
      return done;
    },
    async throw(error?: unknown) {
      if (iterator.throw) await iterator.throw(error);
      else await iterator.return?.();
      return done;
    },
    [Symbol.asyncIterator]() {
      return mapped;
    },
  };
  return mapped;
}
