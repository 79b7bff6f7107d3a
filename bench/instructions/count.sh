#!/usr/bin/env bash
# Instructions per iteration of a driver loop, counted with callgrind, for
# comparisons this VM's clock is too noisy to settle (see README.md).
#
#   bash bench/instructions/count.sh DRIVER MODE N1 N2
#
# Runs DRIVER (a .ts file here) twice under valgrind, with N1 and with N2
# iterations of MODE after its warm-up, and prints (Ir(N2) - Ir(N1)) /
# (N2 - N1) for the JS thread and for all threads. JSC compiles and
# collects on the JS thread here (no concurrent JIT, no concurrent GC, one
# marker), so counts repeat to within about 1%.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
source "$root/scripts/env.sh"
driver=$1 mode=$2 n1=$3 n2=$4
command -v valgrind >/dev/null || { echo "count.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# Main-thread and all-thread totals of one run with `n` iterations.
totals() {
  BUN_JSC_useConcurrentJIT=false BUN_JSC_useConcurrentGC=false BUN_JSC_numberOfGCMarkers=1 \
    valgrind --tool=callgrind --smc-check=all-non-file --separate-threads=yes \
    --callgrind-out-file="$out/cg.$1" "$BUN" "$driver" "$mode" "$1" >"$out/log.$1" 2>&1 \
    || { echo "count.sh: the driver failed with $1 iterations:" >&2; tail -20 "$out/log.$1" >&2; exit 1; }
  local main all
  main=$(sed -n 's/^summary: //p' "$out/cg.$1-01")
  all=$(( $(cat "$out"/cg."$1"-* | sed -n 's/^summary: //p' | paste -sd+) ))
  echo "$main $all"
}
read -r m1 a1 <<<"$(totals "$n1")"
read -r m2 a2 <<<"$(totals "$n2")"
echo "$mode: $(( (m2 - m1) / (n2 - n1) )) instructions per iteration on the JS thread, $(( (a2 - a1) / (n2 - n1) )) on all threads"
