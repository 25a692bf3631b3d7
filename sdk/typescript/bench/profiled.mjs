// worker.mjs under `node --cpu-prof`, for `ledger bench --workload sdk --ts-worker
// sdk/typescript/bench/profiled.mjs`: the profile goes to $LEDGER_CPU_PROF_DIR (default
// the current directory); open it in Chrome's DevTools or summarise it with
// bench/profile-summary.mjs.
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const dir = process.env.LEDGER_CPU_PROF_DIR || process.cwd();
const child = spawn(process.execPath, ["--cpu-prof", `--cpu-prof-dir=${dir}`, join(here, "worker.mjs"), ...process.argv.slice(2)], {
  stdio: ["ignore", "inherit", "inherit"],
});
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
