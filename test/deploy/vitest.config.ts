// `npm run test:deploy`: the image, built from the Dockerfile and run (see
// image.deploy.ts). Apart from `npm test`: the first run makes a base image
// and builds everything (minutes); it needs root and Debian's packages.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  root: fileURLToPath(new URL("../..", import.meta.url)),
  resolve: {
    // As in vitest.config.ts: one graphql instance.
    alias: [{ find: /^graphql$/, replacement: "graphql/index.js" }],
  },
  test: {
    include: ["test/deploy/**/*.deploy.ts"],
    // This run's PostgreSQL and Redis (testkit/services.ts hands them out).
    globalSetup: ["test/setup/services.ts"],
    testTimeout: 180_000,
    hookTimeout: 45 * 60_000,
    pool: "forks",
    maxWorkers: 1,
  },
});
