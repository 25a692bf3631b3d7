// Summarises a .cpuprofile (node --cpu-prof): self time by function and by file, largest
// first, as shares of the sampled time. Usage: node bench/profile-summary.mjs X.cpuprofile [top]
import { readFileSync } from "node:fs";

const [file, topArg] = process.argv.slice(2);
const p = JSON.parse(readFileSync(file, "utf8"));
const top = Number(topArg ?? 25);
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const self = new Map();
for (let i = 0; i < p.samples.length; i++) {
  const dt = p.timeDeltas[i] ?? 0;
  self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + dt);
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
const fn = new Map();
const files = new Map();
for (const [id, us] of self) {
  const cf = byId.get(id).callFrame;
  const where = cf.url ? cf.url.replace(/^.*\/(node_modules|sdk\/typescript|node:)/, "$1") : "(native)";
  const name = `${cf.functionName || "(anonymous)"} ${where}:${cf.lineNumber + 1}`;
  fn.set(name, (fn.get(name) ?? 0) + us);
  files.set(where, (files.get(where) ?? 0) + us);
}
const show = (title, m) => {
  console.log(`${title} (of ${(total / 1e6).toFixed(2)} s sampled)`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${((100 * us) / total).toFixed(1).padStart(6)} %  ${k}`);
  }
};
show("self time by file", files);
show("self time by function", fn);
