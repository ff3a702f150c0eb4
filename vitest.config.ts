import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    // graphql 16 ships CommonJS (main) and ESM (module). Node resolves the
    // dependencies' imports to main; make ours resolve there too, so there is
    // one graphql instance (it refuses to mix types across two).
    alias: [{ find: /^graphql$/, replacement: "graphql/index.js" }],
  },
  test: {
    include: ["test/**/*.spec.ts"],
    // This run's PostgreSQL and Redis (testkit/services.ts hands them to specs).
    globalSetup: ["test/setup/services.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // One worker process runs the spec files in turn and keeps its module cache between
    // them: each file imports the same LangChain, GraphQL and server modules, and loading
    // them once instead of per file saves about 80 s a run. Specs keep their state in
    // their own servers, databases and temporary folders, not in modules.
    isolate: false,
  },
});
