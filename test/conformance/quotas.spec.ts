import { describeQuotaConformance } from "./quotas.ts";
import { deployments } from "./backends.ts";

for (const deployment of deployments) describeQuotaConformance(deployment);
