// npm's prepare and prepack: builds dist/ (JavaScript and its .d.ts types) with the
// TypeScript compiler, so that the package works wherever it is installed from: this
// directory (npm install, or a file: link such as examples/worker-ts's), a git URL, or a
// tarball npm pack made. A file: link gets no devDependencies of its own, so when the
// compiler is not here it installs them first (npm ci from package-lock.json, scripts off).
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const dir = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = join(dir, "node_modules", "typescript", "bin", "tsc");
if (!existsSync(tsc)) {
  const npm = process.env.npm_execpath;
  const [cmd, args] = npm ? [process.execPath, [npm]] : ["npm", []];
  execFileSync(cmd, [...args, "ci", "--ignore-scripts", "--no-audit", "--no-fund"], { cwd: dir, stdio: ["ignore", "inherit", "inherit"] });
}
execFileSync(process.execPath, [tsc, "-p", join(dir, "tsconfig.json")], { cwd: dir, stdio: "inherit" });
