#!/usr/bin/env bash
# Which JIT-compiled JS functions a driver loop spends its instructions in,
# and which OSR exits JSC compiled (a function that exits again and again
# is recompiled each time and may end up stuck in a lower tier).
#
#   bash bench/instructions/jitprof.sh DRIVER MODE N [TOP]
#
# One valgrind run with N iterations after the warm-up, with JSC's
# disassembly dump on (it gives each compiled function's code ranges);
# costs are per iteration, warm-up included.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
source "$root/scripts/env.sh"
driver=$1 mode=$2 n=$3 top=${4:-25}
command -v valgrind >/dev/null || { echo "jitprof.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
BUN_JSC_dumpDisassembly=true BUN_JSC_useConcurrentJIT=false BUN_JSC_useConcurrentGC=false BUN_JSC_numberOfGCMarkers=1 \
  valgrind --tool=callgrind --smc-check=all-non-file --separate-threads=yes \
  --callgrind-out-file="$out/cg" "$BUN" "$driver" "$mode" "$n" >"$out/dump.txt" 2>&1
python3 "$here/jitmap.py" "$out/dump.txt" "$out/cg-01" "$n" "$top"
echo "--- OSR exits compiled (function, exit site; count)"
grep -E "^Generated JIT code for (FTL|DFG) OSR exit" "$out/dump.txt" \
  | sed -E 's/.*OSR exit #[0-9]+ \(([^)]*)\) from ([^:]*):.*/\2 \1/' | sort | uniq -c | sort -rn | head -15 || true
