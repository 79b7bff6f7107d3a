#!/usr/bin/env bash
# README command 2: set everything up, then run every test (Zig unit tests
# and Bun tests). The last line is "N passed, N failed", counting both.
#
#   bash scripts/test.sh          # everything (CI runs this)
#   bash scripts/test.sh --fast   # the edit loop (`bun run test:fast`): no
#                                 # setup, only a rebuild, and no test/release/
#                                 # (cross-builds, pack and install,
#                                 # million-cycle loops)
set -uo pipefail
cd "$(dirname "$0")/.."
tiers=(test/)
if [ "${1:-}" = "--fast" ]; then
  source scripts/env.sh
  [ -x "$ZIG" ] && [ -x "$BUN" ] || { echo "test --fast needs a set-up checkout: run bash scripts/test.sh once"; echo "0 passed, 1 failed"; exit 1; }
  "$ZIG" build --prefix . --release=safe || { echo "build failed"; echo "0 passed, 1 failed"; exit 1; }
  tiers=()
  for dir in test/*/; do
    [ "$dir" != test/release/ ] && compgen -G "$dir*.test.ts" >/dev/null && tiers+=("$dir")
  done
else
  bash scripts/setup.sh --test || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }
  source scripts/env.sh
fi

passed=0
failed=0

echo "== Zig unit tests"
zig_log=$(mktemp)
"$ZIG" build test --summary all 2>&1 | tee "$zig_log"
zig_status=${PIPESTATUS[0]}
zig_line=$(grep -Eo '[0-9]+/[0-9]+ tests passed' "$zig_log" | tail -1)
if [ -n "$zig_line" ]; then
  zig_passed=${zig_line%%/*}
  zig_total=${zig_line#*/}; zig_total=${zig_total%% *}
  passed=$((passed + zig_passed))
  failed=$((failed + zig_total - zig_passed))
elif [ "$zig_status" -ne 0 ]; then
  failed=$((failed + 1)) # the tests did not even build
fi
rm -f "$zig_log"

echo "== Bun tests"
bun_log=$(mktemp)
"$BUN" test --timeout 60000 "${tiers[@]}" 2>&1 | tee "$bun_log"
bun_status=${PIPESTATUS[0]}
bun_passed=$(grep -Eo '^ *[0-9]+ pass$' "$bun_log" | tail -1 | tr -dc 0-9)
bun_failed=$(grep -Eo '^ *[0-9]+ fail$' "$bun_log" | tail -1 | tr -dc 0-9)
passed=$((passed + ${bun_passed:-0}))
failed=$((failed + ${bun_failed:-0}))
if [ -z "$bun_passed" ] && [ "$bun_status" -ne 0 ]; then failed=$((failed + 1)); fi
rm -f "$bun_log"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$zig_status" -eq 0 ] && [ "$bun_status" -eq 0 ]
