import { describeRunEventsConformance } from "./run-events.ts";
import { storageBackends } from "./backends.ts";

for (const backend of storageBackends) describeRunEventsConformance(backend);
