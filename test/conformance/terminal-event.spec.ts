import { describeTerminalEventConformance } from "./terminal-event.ts";
import { deployments } from "./backends.ts";

for (const deployment of deployments) describeTerminalEventConformance(deployment);
// Two workers of a cluster on one SQLite file, their events through the primary's relay (WORKERS > 1 without Redis).
describeTerminalEventConformance({
  name: "SQLite, two workers' events through the cluster relay",
  env: async () => ({ env: {}, cleanup: async () => {} }),
  cluster: true,
});
