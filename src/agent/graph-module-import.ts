// Imports a graph module as an ES module, whatever the package.json of its folder
// says. A module in a folder without `"type": "module"` (or with no package.json)
// is otherwise compiled as CommonJS (by tsx, or by Node for a `"type":
// "commonjs"` folder), and its `import ... from "@langchain/langgraph"` becomes a
// require() of LangGraph's CommonJS build: a second StateGraph class, which
// runledger cannot compile with its checkpointer.
//
// A module resolve hook (node:module register) marks the module ES, and so every
// file it imports from outside node_modules (its own helpers), except the ones
// that say CommonJS by their extension (.cjs, .cts). Packages keep their own
// format. The hook runs in Node's hooks thread, before tsx's (hooks registered
// later run first), and only changes the format the chain resolved: "commonjs"
// becomes "module" (tsx then compiles TypeScript as ESM), "commonjs-typescript"
// "module-typescript" (Node's own type stripping). A file with no format resolved
// (TypeScript on a Node without TypeScript support) is left to fail as it would.
// The helpers are resolved as entry points are (their absolute URL, no importer),
// so tsx does not prepare them as CommonJS imported from ESM.
import { register } from "node:module";
import { pathToFileURL } from "node:url";

/** The query that marks a graph module's URL, for the hook to find. */
const MARK = "runledger-graph-module";

// Plain JavaScript: Node loads it from this data: URL in its hooks thread, in
// development (tsx) and in the production bundle alike, so it is no file of its own.
const HOOKS = `
const MARK = ${JSON.stringify(MARK)};
const esm = new Set();
const CJS_EXTENSION = /\\.c[jt]s$/;
const TO_ESM = { commonjs: "module", "commonjs-typescript": "module-typescript" };
const RELATIVE = ["./", "../", "/", "file:"];
export async function resolve(specifier, context, nextResolve) {
  const fromEsm = context.parentURL !== undefined && esm.has(context.parentURL);
  // A file of its own is resolved as an entry point is, without its importer: tsx would
  // otherwise give a TypeScript file an ES module imports a URL of its own for CommonJS.
  const resolved = fromEsm && RELATIVE.some((start) => specifier.startsWith(start))
    ? await nextResolve(new URL(specifier, context.parentURL).href, { ...context, parentURL: undefined })
    : await nextResolve(specifier, context);
  if (!resolved.url.startsWith("file:")) return resolved;
  const url = new URL(resolved.url);
  if (!(fromEsm || url.searchParams.has(MARK)) || url.pathname.includes("/node_modules/") || CJS_EXTENSION.test(url.pathname)) return resolved;
  esm.add(resolved.url);
  const format = TO_ESM[resolved.format];
  return format ? { ...resolved, format } : resolved;
}
`;

let registered = false;

/** The module's namespace, imported as an ES module (see above). */
export async function importGraphModule(file: string): Promise<Record<string, unknown>> {
  if (!registered) {
    register(`data:text/javascript,${encodeURIComponent(HOOKS)}`);
    registered = true;
  }
  const url = pathToFileURL(file);
  url.searchParams.set(MARK, "");
  return (await import(url.href)) as Record<string, unknown>;
}
