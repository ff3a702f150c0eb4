import { describeCorrelationSqlConformance } from "./correlation-sql.ts";
import { storageBackends } from "./backends.ts";

for (const backend of storageBackends) describeCorrelationSqlConformance(backend);
