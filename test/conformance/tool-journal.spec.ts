import { describeToolJournalConformance } from "./tool-journal.ts";
import { storageBackends } from "./backends.ts";

for (const backend of storageBackends) describeToolJournalConformance(backend);
