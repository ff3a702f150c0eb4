// The console's bundle: esbuild bundles console/src (Preact, TypeScript) into
// one script and one stylesheet named by their content hash, with a source
// map, and renders console/index.html around those names. `npm run build`
// writes the files into dist/console/ (scripts/build.mjs); the server run from
// its sources (`npm start`) makes them in memory instead
// (src/server/routes/console-files.ts). Plain JavaScript, so both can load it
// without compiling anything.
import fs from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const CONSOLE_DIR = fileURLToPath(new URL("../console/", import.meta.url));
/** The client SDK the console is built on, from its sources (its dist/ is built only for npm pack). */
const CLIENT_ENTRY = fileURLToPath(new URL("../packages/client/src/index.ts", import.meta.url));

/** Where the server serves the files (CONSOLE_PATH in src/server/routes/console.ts): the page names its assets by it. */
const CONSOLE_URL_PATH = "/console";

/**
 * Source paths relative to the package (console/src/..., packages/client/src/..., node_modules/...), so
 * the map, which anyone may fetch, does not describe the server's directories.
 * @param {Uint8Array} bytes
 */
function portableSourceMap(bytes) {
  const map = JSON.parse(Buffer.from(bytes).toString("utf8"));
  map.sources = map.sources?.map((/** @type {string} */ source) => {
    const packaged = source.lastIndexOf("node_modules/");
    if (packaged >= 0) return source.slice(packaged);
    const client = source.indexOf("packages/client/");
    return client >= 0 ? source.slice(client) : source.replace(/^(\.\.\/)+/, "console/");
  });
  return Buffer.from(JSON.stringify(map));
}

/**
 * The page (index.html), the script, the stylesheet and the script's source map.
 * @returns {Promise<{ name: string; bytes: Buffer }[]>}
 */
export async function bundleConsole() {
  const result = await esbuild.build({
    absWorkingDir: CONSOLE_DIR,
    entryPoints: { app: "src/main.tsx" },
    tsconfig: path.join(CONSOLE_DIR, "tsconfig.json"),
    bundle: true,
    minify: true,
    format: "esm",
    target: ["chrome111", "firefox111", "safari16.4"],
    jsx: "automatic",
    jsxImportSource: "preact",
    define: { "process.env.NODE_ENV": '"production"' },
    alias: { "@runledger/client": CLIENT_ENTRY },
    entryNames: "[name]-[hash]",
    outdir: "out",
    publicPath: `${CONSOLE_URL_PATH}/`,
    sourcemap: "linked",
    legalComments: "eof",
    write: false,
    logLevel: "silent",
  });
  const files = [];
  let script = "";
  let style = "";
  for (const file of result.outputFiles) {
    const name = path.basename(file.path);
    if (name.endsWith(".js")) script = name;
    if (name.endsWith(".css")) style = name;
    files.push({ name, bytes: name.endsWith(".map") ? portableSourceMap(file.contents) : Buffer.from(file.contents) });
  }
  if (!script || !style) throw new Error("the console build produced no script or no stylesheet");
  const template = await fs.readFile(path.join(CONSOLE_DIR, "index.html"), "utf8");
  const page = template.replace("%STYLE%", `${CONSOLE_URL_PATH}/${style}`).replace("%SCRIPT%", `${CONSOLE_URL_PATH}/${script}`);
  files.push({ name: "index.html", bytes: Buffer.from(page) });
  return files;
}
