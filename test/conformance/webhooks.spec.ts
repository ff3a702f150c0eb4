import { describeWebhookStoreConformance } from "./webhooks.ts";
import { storageBackends } from "./backends.ts";

for (const backend of storageBackends) describeWebhookStoreConformance(backend);
