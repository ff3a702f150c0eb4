import { describeMultitaskConformance } from "./multitask.ts";
import { deployments } from "./backends.ts";

for (const deployment of deployments) describeMultitaskConformance(deployment);
