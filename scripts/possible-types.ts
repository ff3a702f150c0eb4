// possibleTypes.json: every interface and union of the schema with the object
// types that can stand for it. Apollo Client's InMemoryCache needs this map to
// match a fragment on an interface or union (`... on Error { code message }`
// inside a mutation's result union); without it those fields are dropped.
import { isAbstractType, type GraphQLSchema } from "graphql";

export function possibleTypesOf(schema: GraphQLSchema): Record<string, string[]> {
  const map: Record<string, string[]> = {};
  const abstract = Object.values(schema.getTypeMap())
    .filter((type) => isAbstractType(type) && !type.name.startsWith("__"))
    .sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const type of abstract) {
    if (!isAbstractType(type)) continue;
    map[type.name] = schema
      .getPossibleTypes(type)
      .map((t) => t.name)
      .sort();
  }
  return map;
}

/** The file's text, as committed beside schema.graphql. */
export function printPossibleTypes(schema: GraphQLSchema): string {
  return JSON.stringify(possibleTypesOf(schema), null, 2) + "\n";
}
