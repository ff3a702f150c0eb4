import { describeApiConformance } from "./api.ts";
import { deployments } from "./backends.ts";

for (const deployment of deployments) describeApiConformance(deployment);
