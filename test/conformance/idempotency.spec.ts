import { describeIdempotencyConformance } from "./idempotency.ts";
import { deployments } from "./backends.ts";

for (const deployment of deployments) describeIdempotencyConformance(deployment);
