// Fan-out executes each event once per distinct operation and principal, not
// once per subscriber, and never with a subscriber's context (the precondition
// that makes sharing safe: nothing per subscriber but who it is can reach a resolver).
import { describe, expect, it } from "vitest";
import { createSchema, createYoga } from "graphql-yoga";
import { useSharedSubscriptionResults } from "../src/server/plugins/shared-subscription-results.ts";

function setup(plugins: ReturnType<typeof useSharedSubscriptionResults>[]) {
  // Like the event bus: every subscriber receives the same payload object.
  const listeners = new Set<(payload: { events: { n: number } }) => void>();
  let resolved = 0;
  const contextsSeen: Record<string, unknown>[] = [];
  const schema = createSchema({
    typeDefs: /* GraphQL */ `
      type Query { ok: Boolean }
      type Event { n: Int! label(prefix: String!): String! }
      type Subscription { events: Event! }
    `,
    resolvers: {
      Subscription: {
        events: {
          subscribe: async function* () {
            const queue: { events: { n: number } }[] = [];
            let wake: (() => void) | null = null;
            const listener = (payload: { events: { n: number } }) => {
              queue.push(payload);
              wake?.();
            };
            listeners.add(listener);
            try {
              for (;;) {
                while (queue.length) yield queue.shift();
                await new Promise<void>((r) => (wake = r));
              }
            } finally {
              listeners.delete(listener);
            }
          },
        },
      },
      Event: {
        label: (event: { n: number }, { prefix }: { prefix: string }, context: Record<string, unknown>) => {
          resolved += 1;
          contextsSeen.push(context);
          return `${prefix}${event.n}`;
        },
      },
    },
  });
  const yoga = createYoga({ schema, plugins });
  let subscribers = 0;
  const subscribe = async (prefix: string, principal = "alice") => {
    const { parse, subscribe, contextFactory, schema: s } = yoga.getEnveloped({});
    const document = parse(`subscription($p: String!) { events { n label(prefix: $p) } }`);
    // Each subscriber's context carries something of its own, as a request's would.
    const contextValue = { ...(await contextFactory()), subscriber: (subscribers += 1), principal: { id: principal, role: "user" } };
    const result = await subscribe({ schema: s, document, variableValues: { p: prefix }, contextValue });
    return (result as AsyncIterableIterator<{ data: { events: { n: number; label: string } } }>)[Symbol.asyncIterator]();
  };
  const publish = (event: { n: number }) => {
    const payload = { events: event };
    for (const l of listeners) l(payload);
  };
  return { subscribe, publish, listeners, resolvedCount: () => resolved, contextsSeen };
}

async function run(shared: boolean, otherPrincipal = "alice") {
  const t = setup(shared ? [useSharedSubscriptionResults({ sharedContext: (principal) => ({ shared: true, principal: principal.id }) })] : []);
  const same = await Promise.all([t.subscribe("a:"), t.subscribe("a:"), t.subscribe("a:")]);
  const other = await t.subscribe(otherPrincipal === "alice" ? "b:" : "a:", otherPrincipal);
  const firsts = [...same, other].map((it) => it.next());
  await new Promise((r) => setTimeout(r, 10));
  t.publish({ n: 1 });
  const results = (await Promise.all(firsts)).map((r) => r.value.data.events);
  for (const it of [...same, other]) await it.return!();
  return { results, resolved: t.resolvedCount(), listenersLeft: t.listeners.size, contextsSeen: t.contextsSeen };
}

describe("useSharedSubscriptionResults", () => {
  it("executes one event once for subscribers with the same operation and variables", async () => {
    const shared = await run(true);
    expect(shared.results).toEqual([
      { n: 1, label: "a:1" },
      { n: 1, label: "a:1" },
      { n: 1, label: "a:1" },
      { n: 1, label: "b:1" },
    ]);
    // One execution for the three "a:" subscribers, one for "b:".
    expect(shared.resolved).toBe(2);
    expect(shared.listenersLeft).toBe(0);

    // Without the plugin every subscriber executes it: the same answers, four executions.
    const plain = await run(false);
    expect(plain.results).toEqual(shared.results);
    expect(plain.resolved).toBe(4);
  });

  it("runs the shared execution with a context of its own, never a subscriber's", async () => {
    const shared = await run(true);
    expect(shared.contextsSeen).toHaveLength(2);
    for (const context of shared.contextsSeen) expect(context).toEqual({ shared: true, principal: "alice" });
    // The same resolvers without sharing do see each subscriber's own context: the check above can fail.
    const plain = await run(false);
    expect(plain.contextsSeen.map((c) => c.subscriber).sort()).toEqual([1, 2, 3, 4]);
  });

  it("never shares an execution between principals: the same operation of another principal runs with that principal's context", async () => {
    const shared = await run(true, "bob");
    // Four "a:" subscribers: three of alice's share one execution, bob's has its own.
    expect(shared.results.map((r) => r.label)).toEqual(["a:1", "a:1", "a:1", "a:1"]);
    expect(shared.resolved).toBe(2);
    expect(shared.contextsSeen.map((c) => c.principal).sort()).toEqual(["alice", "bob"]);
  });
});
