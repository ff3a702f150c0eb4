import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { WeightedSequencer } from "./test/setup/sequencer.ts";

export default defineConfig({
  resolve: {
    alias: [
      // graphql 16 ships CommonJS (main) and ESM (module). Node resolves the
      // dependencies' imports to main; make ours resolve there too, so there is
      // one graphql instance (it refuses to mix types across two).
      { find: /^graphql$/, replacement: "graphql/index.js" },
      // The workspace packages by name resolve to their sources, as tsconfig.json's paths say: their dist/
      // is built only by npm pack, so a clean checkout has none.
      { find: /^@runledger\/client$/, replacement: fileURLToPath(new URL("./packages/client/src/index.ts", import.meta.url)) },
      { find: /^@runledger\/client\/testing$/, replacement: fileURLToPath(new URL("./packages/client/src/testing.ts", import.meta.url)) },
      { find: /^@runledger\/react$/, replacement: fileURLToPath(new URL("./packages/react/src/index.ts", import.meta.url)) },
    ],
  },
  test: {
    include: ["test/**/*.spec.ts"],
    // This run's PostgreSQL and Redis (testkit/services.ts hands them to specs).
    // The built server the process specs start (test/setup/server-build.ts).
    globalSetup: ["test/setup/services.ts", "test/setup/server-build.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Two worker processes run the spec files, each keeping its module cache between the
    // files it runs: each file imports the same LangChain, GraphQL and server modules, and
    // loading them once per worker instead of per file saves about 80 s a run. Most specs
    // spend their time waiting on servers, browsers and models, so two at once take about
    // a third less time than one after another on a 2-core machine. Specs keep their state
    // in their own servers, databases, ports and temporary folders, never in modules, and
    // share PostgreSQL and Redis as testkit/services.ts says.
    maxWorkers: 2,
    isolate: false,
    // Longest first even on a clean checkout, so the two workers end together.
    sequence: { sequencer: WeightedSequencer },
  },
});
