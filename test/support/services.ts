// Stand-in: only chromiumPath(), until the shared services module (which
// installs what the specs need from Debian's packages) lands on this branch.
import { execFile } from "node:child_process";
import fs from "node:fs";
import { promisify } from "node:util";

const run = promisify(execFile);
const CHROMIUM = "/usr/bin/chromium";

let installing: Promise<string> | undefined;

/** Debian's Chromium, installed with apt-get when missing (the specs run as root in CI). */
export function chromiumPath(): Promise<string> {
  if (fs.existsSync(CHROMIUM)) return Promise.resolve(CHROMIUM);
  installing ??= (async () => {
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    await run("apt-get", ["update"], { env });
    await run("apt-get", ["install", "-y", "--no-install-recommends", "chromium"], { env });
    if (!fs.existsSync(CHROMIUM)) throw new Error(`apt-get installed chromium, but ${CHROMIUM} is missing`);
    return CHROMIUM;
  })();
  return installing;
}
