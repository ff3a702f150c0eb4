import { describeRetentionStoreConformance } from "./retention.ts";
import { storageBackends } from "./backends.ts";

for (const backend of storageBackends) describeRetentionStoreConformance(backend);
