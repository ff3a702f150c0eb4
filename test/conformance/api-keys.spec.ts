import { describeApiKeyStoreConformance } from "./api-keys.ts";
import { storageBackends } from "./backends.ts";

for (const backend of storageBackends) describeApiKeyStoreConformance(backend);
