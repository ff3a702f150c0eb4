import { describeCrossUserConformance } from "./cross-user.ts";
import { deployments } from "./backends.ts";

for (const deployment of deployments) describeCrossUserConformance(deployment);
