#!/usr/bin/env bash
# README command 2: set everything up, then run every test (Zig unit tests
# and Bun tests). The last line is "N passed, N failed", counting both.
#
#   bash scripts/test.sh          # everything (CI runs this)
#   bash scripts/test.sh --fast   # the edit loop (`bun run test:fast`): no
#                                 # setup, only a rebuild, and no test/release/
#                                 # (cross-builds, pack and install,
#                                 # million-cycle loops)
#   bash scripts/test.sh --fast --repeat 10 --load
#                                 # stress: the tests 10 times over, with a
#                                 # CPU burner per core beside them; the last
#                                 # line sums every run
set -uo pipefail
cd "$(dirname "$0")/.."
fast=0
repeat=1
load=0
while [ $# -gt 0 ]; do
  case "$1" in
    --fast) fast=1 ;;
    --load) load=1 ;;
    --repeat)
      repeat="${2:-}"
      shift
      [[ "$repeat" =~ ^[1-9][0-9]*$ ]] || { echo "--repeat needs a positive whole number"; echo "0 passed, 1 failed"; exit 1; }
      ;;
    *) echo "unknown option $1 (use --fast, --repeat N, --load)"; echo "0 passed, 1 failed"; exit 1 ;;
  esac
  shift
done

tiers=(test/)
if [ "$fast" = 1 ]; then
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

# --load: one busy loop per core for as long as the tests run.
burners=()
stop_burners() {
  for pid in "${burners[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${burners[@]}"; do wait "$pid" 2>/dev/null; done
  burners=()
}
trap stop_burners EXIT
trap 'stop_burners; exit 130' INT TERM
if [ "$load" = 1 ]; then
  cores=$(nproc 2>/dev/null || echo 2)
  for _ in $(seq "$cores"); do
    (while :; do :; done) &
    burners+=("$!")
  done
  echo "== load: ${#burners[@]} CPU burners"
fi

passed=0
failed=0
ok=1

run_once() {
  echo "== Zig unit tests"
  local zig_log zig_status zig_line zig_passed zig_total bun_log bun_status bun_passed bun_failed
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
  [ "$zig_status" -eq 0 ] && [ "$bun_status" -eq 0 ] || ok=0
}

for run in $(seq "$repeat"); do
  before_passed=$passed
  before_failed=$failed
  [ "$repeat" -gt 1 ] && echo "== run $run of $repeat"
  run_once
  [ "$repeat" -gt 1 ] && echo "== run $run of $repeat: $((passed - before_passed)) passed, $((failed - before_failed)) failed"
done
stop_burners

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$ok" = 1 ]
