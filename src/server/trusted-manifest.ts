// TRUSTED_OPERATIONS_FILE, read once at start-up: a JSON object of operation id →
// document, as graphql-codegen's client preset (persisted-documents.json) and
// relay-compiler's persisted queries (persistConfig.file) write it. Every document
// must parse and validate against this server's schema, so a manifest built for
// another version of the API stops start-up instead of failing request by request.
import { readFileSync } from "node:fs";
import { GraphQLError, parse, validate } from "graphql";
import { ConfigError } from "../config.ts";
import { schema } from "../schema/index.ts";

/** Operation id → document text. */
export type TrustedManifest = ReadonlyMap<string, string>;

const VARIABLE = "TRUSTED_OPERATIONS_FILE";

/** The manifest at `file`; a ConfigError naming the variable when it cannot be used. */
export function loadTrustedManifest(file: string, readFile: (p: string) => string = (p) => readFileSync(p, "utf8")): TrustedManifest {
  const refuse = (why: string) => new ConfigError(`${VARIABLE} ${file}: ${why}`);
  let text: string;
  try {
    text = readFile(file);
  } catch (error) {
    throw refuse(`cannot be read: ${(error as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw refuse(`is not JSON: ${(error as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw refuse("must be a JSON object of operation id → document");
  }
  const manifest = new Map<string, string>();
  for (const [id, document] of Object.entries(value)) {
    if (typeof document !== "string") throw refuse(`the entry "${id}" must be a document (a string), got ${JSON.stringify(document)}`);
    let parsed;
    try {
      parsed = parse(document);
    } catch (error) {
      if (!(error instanceof GraphQLError)) throw error;
      throw refuse(`the operation "${id}" does not parse: ${error.message}`);
    }
    const [invalid] = validate(schema, parsed);
    if (invalid) throw refuse(`the operation "${id}" does not validate against the schema: ${invalid.message}`);
    manifest.set(id, document);
  }
  // An empty list would let no one but admins do anything: a build that found no documents, most likely.
  if (manifest.size === 0) throw refuse("lists no operations");
  return manifest;
}
