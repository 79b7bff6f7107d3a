/**
 * Gives dist/js/node.js (what Node.js loads for every entry point, the
 * "node" condition of package.json "exports") every name of every entry
 * point, so that an ES module's named imports link under Node.js and its
 * evaluation reaches node.js's "runs on Bun only" error: Node resolves
 * named imports before it runs anything, and a name the module lacks is a
 * SyntaxError that names neither this package nor Bun. The names are read
 * from the built entry points (their "bun" targets), so a new export or
 * entry point is covered by the next build. Run by scripts/build-js.sh.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dir, "..");
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { exports: Record<string, string | Record<string, string>> };
const nodeTarget = "./dist/js/node.js";
const names = new Set<string>();
for (const [entry, conditions] of Object.entries(manifest.exports)) {
  if (typeof conditions === "string" || conditions.node === undefined) continue;
  if (conditions.node !== nodeTarget) throw new Error(`package.json exports["${entry}"].node is ${conditions.node}, not ${nodeTarget}`);
  const target = conditions.bun ?? conditions.import;
  if (target === undefined) throw new Error(`package.json exports["${entry}"] has no "bun" target`);
  for (const name of Object.keys(await import(join(root, target)))) names.add(name);
}
names.delete("default");
const file = join(root, nodeTarget);
const source = readFileSync(file, "utf8");
if (source.includes("export let ")) throw new Error(`${nodeTarget} already has its names: rebuild it with scripts/build-js.sh`);
const sorted = [...names].sort();
// The exports follow the throw: bindings exist at link time, the throw
// runs first at evaluation, so none of them is ever assigned.
writeFileSync(file, `${source.trimEnd()}\n// Every name of every entry point (scripts/node-entry.ts), never assigned.\nexport let ${sorted.join(", ")};\nexport default undefined;\n`);
console.log(`${nodeTarget}: ${sorted.length} names of ${Object.keys(manifest.exports).length - 1} entry points`);
