import { describeScheduleStoreConformance } from "./schedules.ts";
import { storageBackends } from "./backends.ts";

for (const backend of storageBackends) describeScheduleStoreConformance(backend);
