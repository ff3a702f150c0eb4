// `npm run keys -- ...`: the API keys command (src/cli/keys.ts), as `runledger keys` runs it.
import { runKeys } from "../src/cli/keys.ts";

process.exit(await runKeys(process.argv.slice(2), "npm run keys --"));
