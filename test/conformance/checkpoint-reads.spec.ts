import { describeCheckpointReadsConformance } from "./checkpoint-reads.ts";
import { storageBackends } from "./backends.ts";

for (const backend of storageBackends) describeCheckpointReadsConformance(backend);
