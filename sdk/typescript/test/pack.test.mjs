// What npm pack makes is what a team installs: the tarball holds dist (JavaScript and its
// types) and the README; installed into an empty project, it type-checks and runs
// examples/worker-ts against a real server, and CommonJS can load it as the README says.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot, sdkDir, startServer } from "./server.mjs";

const npm = process.env.npm_execpath ? [process.execPath, [process.env.npm_execpath]] : ["npm", []];
const runNpm = (args, cwd) => execFileSync(npm[0], [...npm[1], ...args], { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

test("the packed tarball installs into an empty project and runs the example", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "ledger-ts-pack-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // --ignore-scripts: npm test has just built dist, and prepack's rebuild would rewrite it
  // under the test files running beside this one.
  const file = runNpm(["pack", "--pack-destination", dir, "--silent", "--ignore-scripts"], sdkDir).trim().split("\n").pop();
  const tgz = join(dir, file);
  const listed = execFileSync("tar", ["-tzf", tgz], { encoding: "utf8" }).split("\n");
  for (const want of ["package/package.json", "package/README.md", "package/dist/index.js", "package/dist/index.d.ts", "package/dist/worker.d.ts"]) {
    assert.ok(listed.includes(want), `${want} is not in the tarball: ${listed.join(" ")}`);
  }
  assert.ok(!listed.some((f) => f.startsWith("package/src/") || f.startsWith("package/test/")), "sources or tests were packed");

  const proj = join(dir, "proj");
  execFileSync("mkdir", [proj]);
  writeFileSync(join(proj, "package.json"), JSON.stringify({ name: "empty", private: true, type: "module" }));
  runNpm(["install", tgz, "--no-audit", "--no-fund", "--offline"], proj);

  // The example, compiled against the installed package's types (node's from the SDK's devDependencies).
  writeFileSync(join(proj, "main.ts"), readFileSync(join(repoRoot, "examples", "worker-ts", "main.ts"), "utf8"));
  writeFileSync(
    join(proj, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, outDir: "dist", skipLibCheck: true, types: ["node"], typeRoots: [join(sdkDir, "node_modules", "@types")] },
      files: ["main.ts"],
    }),
  );
  try {
    execFileSync(process.execPath, [join(sdkDir, "node_modules", "typescript", "bin", "tsc"), "-p", proj], { encoding: "utf8" });
  } catch (err) {
    assert.fail(`tsc: ${err.stdout}${err.stderr}`);
  }

  const s = await startServer(t);
  const out = await new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [join(proj, "dist", "main.js"), "--url", s.url, "--key", s.runtimeKey, "--admin-key", s.adminKey, "--enqueue", "1", "--runs", "1", "--steps", "2", "--step-time", "10ms"], {
      cwd: proj,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let text = "";
    p.stdout.on("data", (b) => (text += b));
    p.stderr.on("data", (b) => (text += b));
    const timer = setTimeout(() => p.kill("SIGKILL"), 60_000);
    p.on("exit", (code) => (clearTimeout(timer), code === 0 ? resolve(text) : reject(new Error(`the example exited ${code}: ${text}`))));
  });
  assert.match(out, /succeeded/);

  // CommonJS: require works where Node requires ES modules; elsewhere the README's error; import() always.
  writeFileSync(join(proj, "app.cjs"), 'import("@ledger/client").then((m) => console.log(typeof m.Client));');
  assert.equal(execFileSync(process.execPath, [join(proj, "app.cjs")], { cwd: proj, encoding: "utf8" }).trim(), "function");
  writeFileSync(join(proj, "req.cjs"), 'try { console.log(typeof require("@ledger/client").Client) } catch (e) { console.log(e.code) }');
  if (process.features.require_module) {
    assert.equal(execFileSync(process.execPath, [join(proj, "req.cjs")], { cwd: proj, encoding: "utf8" }).trim(), "function");
  }
  const old = execFileSync(process.execPath, ["--no-experimental-require-module", join(proj, "req.cjs")], { cwd: proj, encoding: "utf8" }).trim();
  assert.equal(old, "ERR_REQUIRE_ESM");
  assert.match(readFileSync(join(sdkDir, "README.md"), "utf8"), /ERR_REQUIRE_ESM/);
});
