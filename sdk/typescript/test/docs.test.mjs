// The TypeScript in the docs and examples/worker-ts compiles as written, against the SDK.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot, sdkDir } from "./server.mjs";

/** tsc type-checks files with @ledger/client resolved to the built SDK. */
function tsc(dir, files) {
  const config = {
    compilerOptions: {
      target: "ES2022",
      module: "NodeNext",
      moduleResolution: "NodeNext",
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      types: ["node"],
      typeRoots: [join(sdkDir, "node_modules", "@types")],
      baseUrl: dir,
      paths: { "@ledger/client": [join(sdkDir, "dist", "index.d.ts")] },
    },
    files,
  };
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify(config));
  try {
    execFileSync(process.execPath, [join(sdkDir, "node_modules", "typescript", "bin", "tsc"), "-p", join(dir, "tsconfig.json")], { encoding: "utf8" });
  } catch (err) {
    assert.fail(`tsc: ${err.stdout}${err.stderr}`);
  }
}

test("the TypeScript section of docs/runtimes.md and examples/worker-ts compile", () => {
  const doc = readFileSync(join(repoRoot, "docs", "runtimes.md"), "utf8");
  const section = doc.slice(doc.indexOf("## Write a runtime in TypeScript"));
  const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(code, "no ts block in the section");
  const dir = mkdtempSync(join(tmpdir(), "ledger-ts-docs-"));
  try {
    writeFileSync(join(dir, "docs.mts"), code);
    writeFileSync(join(dir, "main.mts"), readFileSync(join(repoRoot, "examples", "worker-ts", "main.ts"), "utf8"));
    tsc(dir, ["docs.mts", "main.mts"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
  assert.match(readme, /## Write a runtime in TypeScript[\s\S]*docs\/runtimes\.md#write-a-runtime-in-typescript/);
});
