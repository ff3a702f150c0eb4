// first/last of every connection field, checked against MAX_PAGE_SIZE before
// execution starts, with the operation's variables: a demanding client prefers a
// clear error to a page silently cut short (the Prisma connections clamp to their
// maxSize). Envelop's execute and subscribe hooks run for HTTP, SSE and graphql-ws.
import {
  GraphQLError,
  Kind,
  TypeInfo,
  getNamedType,
  getOperationAST,
  visit,
  visitWithTypeInfo,
  type ArgumentNode,
  type DocumentNode,
  type ExecutionArgs,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValueNode,
} from "graphql";
import type { Plugin } from "graphql-yoga";
import { limitError } from "./limit-error.ts";

const PAGE_ARGUMENTS = new Set(["first", "last"]);

interface PageArgument {
  node: ArgumentNode;
  field: string;
}

/** The first/last arguments of connection fields the operation reaches; found once per parsed document and operation. */
function pageArguments(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): PageArgument[] {
  // The executed operation and the fragments it reaches; the document's other operations do not run.
  const fragments = new Map(document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]));
  const reached = new Map<string, FragmentDefinitionNode>();
  const collect = (node: Parameters<typeof visit>[0]) =>
    visit(node, {
      FragmentSpread(spread) {
        const fragment = fragments.get(spread.name.value);
        if (fragment && !reached.has(fragment.name.value)) {
          reached.set(fragment.name.value, fragment);
          collect(fragment);
        }
      },
    });
  collect(operation);
  const executed: DocumentNode = { kind: Kind.DOCUMENT, definitions: [operation, ...reached.values()] };

  const found: PageArgument[] = [];
  const typeInfo = new TypeInfo(schema);
  visit(
    executed,
    visitWithTypeInfo(typeInfo, {
      Argument(argument) {
        if (!PAGE_ARGUMENTS.has(argument.name.value)) return;
        const field = typeInfo.getFieldDef();
        if (field && getNamedType(field.type).name.endsWith("Connection")) found.push({ node: argument, field: field.name });
      },
    }),
  );
  return found;
}

// Parsed documents are cached and reused by yoga, so the walk above runs once per distinct document.
const pageArgumentsByDocument = new WeakMap<DocumentNode, Map<OperationDefinitionNode, PageArgument[]>>();

/** The first bad first/last in the operation to be executed, or null. */
export function pageSizeViolation(args: Pick<ExecutionArgs, "schema" | "document" | "operationName" | "variableValues">, max: number): GraphQLError | null {
  const operation = getOperationAST(args.document, args.operationName);
  if (!operation) return null; // execution reports the unknown operation itself
  let byOperation = pageArgumentsByDocument.get(args.document);
  if (!byOperation) pageArgumentsByDocument.set(args.document, (byOperation = new Map()));
  let found = byOperation.get(operation);
  if (!found) byOperation.set(operation, (found = pageArguments(args.schema as GraphQLSchema, args.document, operation)));
  if (found.length === 0) return null;

  const variables = (args.variableValues ?? {}) as Record<string, unknown>;
  const defaults = new Map<string, ValueNode | undefined>(operation.variableDefinitions?.map((d) => [d.variable.name.value, d.defaultValue]) ?? []);
  const valueOf = (node: ValueNode): unknown => {
    if (node.kind === Kind.INT) return Number(node.value);
    if (node.kind !== Kind.VARIABLE) return undefined;
    const name = node.name.value;
    if (Object.hasOwn(variables, name)) return variables[name];
    const fallback = defaults.get(name);
    return fallback?.kind === Kind.INT ? Number(fallback.value) : undefined;
  };

  for (const { node, field } of found) {
    const value = valueOf(node.value);
    if (typeof value !== "number" || !Number.isInteger(value)) continue; // null or absent: the default page; other types fail coercion
    if (value < 0) {
      return new GraphQLError(`${node.name.value} of ${field} must not be negative, got ${value}.`, {
        nodes: [node],
        extensions: { code: "VALIDATION", http: { spec: true, status: 400 } },
      });
    }
    if (value > max)
      return limitError(`${node.name.value} of ${field} must be at most ${max}, got ${value}; page with after/before.`, "MAX_PAGE_SIZE", max, [node]);
  }
  return null;
}

export function usePageSizeLimit(max: number): Plugin {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const violation = pageSizeViolation(args, max);
      if (violation) setResultAndStopExecution({ errors: [violation] });
    },
    onSubscribe({ args, setResultAndStopExecution }) {
      const violation = pageSizeViolation(args, max);
      if (violation) setResultAndStopExecution({ errors: [violation] });
    },
  };
}
