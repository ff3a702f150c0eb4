// Where the console's files come from. `npm run build` writes them into
// dist/console/ and builds the server with RUNLEDGER_BUILT defined (esbuild's
// `define`, scripts/build.mjs): that server, `node dist/main.js`, reads the
// files built with it, and never loads esbuild. Run from its sources (`npm
// start` under tsx, the tests) nothing defines it, and the server bundles
// console/src itself (scripts/console-bundle.mjs), loading esbuild, a
// development dependency, only then. A build-time mark rather than NODE_ENV or
// the presence of dist/: a server run from its sources never serves a stale
// dist/ left by an earlier build, whatever its environment says.
import fs from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

declare const RUNLEDGER_BUILT: boolean | undefined;

/** True in the server `npm run build` made. */
export const IS_BUILT = typeof RUNLEDGER_BUILT !== "undefined" && RUNLEDGER_BUILT;

// In dist/main.js too, import.meta.url names this source file's place in the package (scripts/build.mjs).
const PACKAGE_DIR = new URL("../../../", import.meta.url);

/** Where `npm run build` writes the console's files. */
export const BUILT_CONSOLE_DIR = fileURLToPath(new URL("dist/console/", PACKAGE_DIR));

export interface ConsoleFile {
  name: string;
  bytes: Buffer;
}

async function readBuiltFiles(): Promise<ConsoleFile[]> {
  const names = await fs.readdir(BUILT_CONSOLE_DIR);
  return Promise.all(names.map(async (name) => ({ name, bytes: await fs.readFile(path.join(BUILT_CONSOLE_DIR, name)) })));
}

async function bundleFromSources(): Promise<ConsoleFile[]> {
  // A specifier computed at run time, so the server's build leaves this import
  // (and esbuild behind it) out of dist/main.js.
  const bundler = (await import(new URL("scripts/console-bundle.mjs", PACKAGE_DIR).href)) as typeof import("../../../scripts/console-bundle.mjs");
  return bundler.bundleConsole();
}

/** The page (index.html), the script, the stylesheet and the source map, by file name. */
export function loadConsoleFiles(): Promise<ConsoleFile[]> {
  return IS_BUILT ? readBuiltFiles() : bundleFromSources();
}
