import { describeApiConformance, type Deployment } from "./api.ts";
import { postgresDatabase } from "../support/services.ts";

const deployments: Deployment[] = [
  { name: "SQLite, events in memory", env: async () => ({ env: {}, cleanup: async () => {} }) },
  {
    name: "PostgreSQL, events in memory",
    env: async () => {
      const database = await postgresDatabase();
      return { env: { DATABASE_URL: database.url }, cleanup: () => database.drop() };
    },
  },
];

for (const deployment of deployments) describeApiConformance(deployment);
