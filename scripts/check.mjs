// `npm test`'s first step: the formatting check and the type check, side by
// side (neither keeps both cores busy all the time). Each one's output is
// printed whole once it ends; either failing fails the step.
import { spawn } from "node:child_process";

function run(command, args) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("error", (error) => resolve({ code: 1, output: `${command}: ${error.message}\n` }));
    child.on("close", (code) => resolve({ code, output }));
  });
}

const checks = [
  ["prettier", ["--check", "."]],
  ["tsc", ["-p", "."]],
];
let failed = false;
for (const [[command, args], result] of (await Promise.all(checks.map(([command, args]) => run(command, args)))).map((r, i) => [checks[i], r])) {
  process.stdout.write(`> ${command} ${args.join(" ")}\n${result.output}`);
  if (result.code !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
