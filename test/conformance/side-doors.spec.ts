import { describeSideDoorConformance } from "./side-doors.ts";
import { deployments } from "./backends.ts";

for (const deployment of deployments) describeSideDoorConformance(deployment);
