import { describeApiConformance, type Deployment } from "./api.ts";
import { postgresDatabase, redisServer, uniqueName } from "../support/services.ts";

const deployments: Deployment[] = [
  { name: "SQLite, events in memory", env: async () => ({ env: {}, cleanup: async () => {} }) },
  {
    name: "PostgreSQL, events in memory",
    env: async () => {
      const database = await postgresDatabase();
      return { env: { DATABASE_URL: database.url }, cleanup: () => database.drop() };
    },
  },
  {
    name: "PostgreSQL, events through Redis",
    env: async () => {
      const [database, redis] = await Promise.all([postgresDatabase(), redisServer()]);
      return { env: { DATABASE_URL: database.url, REDIS_URL: redis.url, REDIS_KEY_PREFIX: `${uniqueName("api")}:` }, cleanup: () => database.drop() };
    },
  },
];

for (const deployment of deployments) describeApiConformance(deployment);
