import { describeTerminalEventConformance } from "./terminal-event.ts";
import { deployments } from "./backends.ts";

for (const deployment of deployments) describeTerminalEventConformance(deployment);
