// npm run build: bundles the example with esbuild into dist/: the page's
// script (dist/public/app.js, React included) and the web server that
// renders pages and serves it (dist/server.js, for Node).
//
// In this repository the SDK is bundled from its sources (packages/*/src):
// the packages' own dist/ is built only by npm pack. An app outside it uses
// the installed @runledger/client and @runledger/react.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as esbuild from "esbuild";

const HERE = path.dirname(fileURLToPath(import.meta.url));

function sdkSources(): Record<string, string> {
  const packages = path.resolve(HERE, "..", "..", "packages");
  const client = path.join(packages, "client", "src", "index.ts");
  return fs.existsSync(client) ? { "@runledger/client": client, "@runledger/react": path.join(packages, "react", "src", "index.ts") } : {};
}

export interface BuildOptions {
  /** Default: dist/ beside this file. */
  outdir?: string;
  /** Minify the page's script (default true). */
  minify?: boolean;
}

export interface Built {
  /** The page's script: <outdir>/public/app.js. */
  script: string;
  /** The server module: <outdir>/server.js. */
  server: string;
  /** The page script's size in bytes. */
  scriptBytes: number;
}

export async function buildExample(options: BuildOptions = {}): Promise<Built> {
  const outdir = options.outdir ?? path.join(HERE, "dist");
  const script = path.join(outdir, "public", "app.js");
  const server = path.join(outdir, "server.js");
  const common: esbuild.BuildOptions = {
    absWorkingDir: HERE,
    bundle: true,
    format: "esm",
    jsx: "automatic",
    alias: sdkSources(),
    loader: { ".css": "text" },
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "warning",
  };
  await Promise.all([
    esbuild.build({
      ...common,
      entryPoints: [path.join(HERE, "src", "browser.tsx")],
      outfile: script,
      platform: "browser",
      target: ["es2022"],
      minify: options.minify ?? true,
      sourcemap: "linked",
    }),
    esbuild.build({
      ...common,
      entryPoints: [path.join(HERE, "src", "server.tsx")],
      outfile: server,
      platform: "node",
      target: ["node20"],
      // React's CommonJS builds require() their parts: give the ES module a require.
      banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
    }),
  ]);
  return { script, server, scriptBytes: fs.statSync(script).size };
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const built = await buildExample();
  console.log(
    `wrote ${path.relative(process.cwd(), built.script)} (${Math.round(built.scriptBytes / 1024)} KiB) and ${path.relative(process.cwd(), built.server)}`,
  );
}
