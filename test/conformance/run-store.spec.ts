import { describeRunStoreConformance } from "./run-store.ts";
import { storageBackends } from "./backends.ts";

for (const backend of storageBackends) describeRunStoreConformance(backend);
