// graphql-codegen for runledger's schema: TypeScript types of your operations
// and a typed document for each (TypedDocumentNode, which Apollo Client, urql
// and graphql-request accept). Run it with `npx graphql-codegen --config
// codegen.ts` after installing @graphql-codegen/cli, @graphql-codegen/add,
// @graphql-codegen/typescript-operations and @graphql-codegen/typed-document-node
// (typescript-operations 6 writes the enums and inputs it needs itself).
//
// The two custom scalars: without a mapping codegen types them `unknown`.
// DateTime is an ISO-8601 string on the wire (2026-11-30T14:02:00.000Z), and
// JSON is any JSON value (a tool call's arguments, a checkpoint write).
import type { CodegenConfig } from "@graphql-codegen/cli";

const config: CodegenConfig = {
  schema: "schema.graphql",
  // This repository's example operations; point it at your own.
  documents: ["test/clients/operations.graphql"],
  generates: {
    "test/clients/generated/graphql.ts": {
      plugins: [
        { add: { content: "export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };" } },
        "typescript-operations",
        "typed-document-node",
      ],
      config: {
        scalars: {
          DateTime: { input: "string", output: "string" },
          JSON: { input: "JsonValue", output: "JsonValue" },
        },
        // Enums as string unions, so the file has no runtime code besides the documents.
        enumsAsTypes: true,
        useTypeImports: true,
      },
    },
  },
};

export default config;
