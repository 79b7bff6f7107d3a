#!/usr/bin/env bash
# Compiles ts/ to dist/js/ (JS + .d.ts) with the pinned TypeScript, for
# the package's "exports" map. Run by `npm pack` (prepack) and by the
# package smoke test. dist/ is git-ignored.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
rm -rf dist/js
"$BUN" node_modules/typescript/bin/tsc -p tsconfig.build.json
# tsc rewrites relative ".ts" imports to ".js" in the JS it emits, not in
# the declarations; do it there too, so that every moduleResolution
# (NodeNext included) finds the .d.ts beside each .js.
find dist/js -name '*.d.ts' -exec sed -i -E 's#(["'"'"'])(\.\.?/[^"'"'"']*)\.ts(["'"'"'])#\1\2.js\3#g' {} +
# Node.js's stand-in module gets every entry point's names (it throws
# "runs on Bun only" before any is used).
"$BUN" scripts/node-entry.ts
echo "dist/js: $(find dist/js -name '*.js' | wc -l) modules, $(find dist/js -name '*.d.ts' | wc -l) declarations"
