#!/usr/bin/env node
// npm run build: src/main.ts → dist/main.js, one ES module for Node (plain
// JavaScript, with a source map), every package left to node_modules; and the
// console's page, script and stylesheet → dist/console/, which that server
// serves (it is built with RUNLEDGER_BUILT defined, so it neither bundles the
// console nor loads esbuild). Run it with `node dist/main.js` from the package
// folder's copy of dist/, beside prisma/ and node_modules/.
//
// A source file's import.meta.url names that file, and the server finds its
// files from there (the built console, the migrations). In the bundle it
// would name dist/main.js instead, so each source file's import.meta.url is
// rewritten to the URL its file has, relative to the bundle: the same paths
// resolve from dist/ as from src/.
import fs from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { bundleConsole } from "./console-bundle.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const SRC = path.join(ROOT, "src") + path.sep;
const OUTDIR = path.join(ROOT, "dist");
const OUTFILE = path.join(OUTDIR, "main.js");
const CONSOLE_OUTDIR = path.join(OUTDIR, "console");

/** @type {esbuild.Plugin} */
const sourceFileUrls = {
  name: "source-file-urls",
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (!args.path.startsWith(SRC)) return undefined;
      const text = await fs.readFile(args.path, "utf8");
      if (!text.includes("import.meta.url")) return undefined;
      const fromBundle = path.relative(OUTDIR, args.path).split(path.sep).join("/");
      return { contents: text.replaceAll("import.meta.url", `new URL(${JSON.stringify(fromBundle)}, import.meta.url).href`), loader: "ts" };
    });
  },
};

/** Bundles one entry point of the package into `outfile` (packages stay in node_modules) and says so. */
async function bundle(entry, outfile, options = {}) {
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: [path.join(ROOT, entry)],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20.19",
    packages: "external",
    sourcemap: "linked",
    tsconfig: path.join(ROOT, "tsconfig.json"),
    define: { RUNLEDGER_BUILT: "true" },
    plugins: [sourceFileUrls],
    logLevel: "warning",
    metafile: true,
    ...options,
  });
  const bytes = result.metafile.outputs[path.relative(ROOT, outfile)]?.bytes ?? 0;
  process.stdout.write(`wrote ${path.relative(ROOT, outfile)} (${Math.round(bytes / 1024)} KiB)\n`);
  return result;
}

await fs.rm(OUTDIR, { recursive: true, force: true });
// Split where src/main.ts imports the server lazily: a cluster's primary (WORKERS > 1) loads
// only what it needs, and its workers the rest. Chunks sit beside main.js (chunk-*.js), so
// each file's rewritten import.meta.url resolves from dist/ as from src/.
await bundle("src/main.ts", OUTFILE, { outfile: undefined, outdir: OUTDIR, splitting: true, entryNames: "main", chunkNames: "chunk-[hash]" });
// The API key CLI (`npm run keys`), for a deployment without tsx: node dist/keys.js create --user NAME.
await bundle("scripts/keys.ts", path.join(OUTDIR, "keys.js"));
// The `runledger` command (package.json's bin): serve, migrate, keys, check-config. It imports
// dist/main.js by a path computed at run time, so the server is not bundled twice.
const CLI = path.join(OUTDIR, "cli.js");
await bundle("src/cli/index.ts", CLI, { banner: { js: "#!/usr/bin/env node" }, logOverride: { "unsupported-dynamic-import": "silent" } });
await fs.chmod(CLI, 0o755);

const consoleFiles = await bundleConsole();
await fs.mkdir(CONSOLE_OUTDIR, { recursive: true });
for (const file of consoleFiles) await fs.writeFile(path.join(CONSOLE_OUTDIR, file.name), file.bytes);
const consoleBytes = consoleFiles.reduce((sum, file) => sum + file.bytes.length, 0);
process.stdout.write(
  `wrote ${path.relative(ROOT, CONSOLE_OUTDIR)}/ (${consoleFiles.map((file) => file.name).join(", ")}; ${Math.round(consoleBytes / 1024)} KiB)\n`,
);
