import { describeConversationListConformance } from "./conversation-list.ts";
import { storageBackends } from "./backends.ts";

for (const backend of storageBackends) describeConversationListConformance(backend);
