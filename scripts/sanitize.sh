#!/usr/bin/env bash
# A run under sanitizers (docs/fuzzing.md):
#   bash scripts/sanitize.sh            # about a minute on 2 cores
#   bash scripts/sanitize.sh --check    # steps 1 and 2 only: the builds
#
# test/structure/sanitize_script.test.ts runs --check, so the script's copy of the
# repository and its builds stay in step with build.zig.
#
# 1. Builds the library in Debug (every Zig safety check on: integer
#    overflow, bounds, unreachable, alignment) and the test fixtures.
# 2. Rebuilds the C fixtures the tests load (the producer with its guarded
#    buffers and release counts, the consumers, the stream and async peers)
#    with gcc -fsanitize=address,undefined. zig cc has no ASan runtime, so
#    gcc's is used: Bun itself is not instrumented, but it runs with
#    libasan and libubsan preloaded, which is enough for the instrumented
#    fixtures (out-of-bounds access and use-after-free on their heap,
#    undefined behaviour in their code).
# 3. Runs a representative subset in that setting: bad input, conversion
#    errors, producers' quirks, every type's import, lifetimes of owners,
#    and the fuzzer (FUZZ_CASES, default 3000, in its worker processes, which
#    inherit the preload).
#
# Everything happens in a temporary copy of the repository, so the normal
# build outputs are left alone. Exits non-zero on any failure or report.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh

check=0
case "${1:-}" in
  "") ;;
  --check) check=1 ;;
  *) echo "sanitize: unknown argument $1 (usage: scripts/sanitize.sh [--check])"; exit 2 ;;
esac
command -v gcc >/dev/null || { echo "sanitize: gcc is needed (zig cc has no ASan runtime)"; exit 1; }
asan=$(readlink -f "$(gcc -print-file-name=libasan.so)")
ubsan=$(readlink -f "$(gcc -print-file-name=libubsan.so)")
[ -f "$asan" ] && [ -f "$ubsan" ] || { echo "sanitize: gcc's libasan/libubsan are not installed"; exit 1; }
if [ "$check" -eq 0 ] && [ ! -f build/fixtures/libarrow_shim.so ]; then
  echo "sanitize: run 'bash scripts/setup.sh --test' first (the Arrow C++ shim)"; exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/arrow-device-sanitize.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Everything build.zig reads (its sources: zig/, native/, examples/c/,
# test/fixtures/) and everything the tests below import.
cp -a ts test zig native examples scripts lib build.zig package.json tsconfig.json "$work"/
mkdir -p "$work/build/fixtures"
[ "$check" -eq 1 ] || cp build/fixtures/libarrow_shim.so "$work/build/fixtures/"
ln -s "$PROJECT_ROOT/node_modules" "$work/node_modules"
ln -s "$PROJECT_ROOT/.toolchain" "$work/.toolchain"
cd "$work"

start=$(date +%s)
echo "== Debug build of the library and fixtures"
# The repository's Zig cache is shared: a second run rebuilds nothing.
"$ZIG" build --prefix . --cache-dir "$PROJECT_ROOT/.zig-cache" # no --release: Debug

echo "== C fixtures with gcc -fsanitize=address,undefined"
for name in c_producer c_peer owners_peer stream_peer async_peer; do
  gcc -std=c11 -shared -fPIC -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined \
    -pthread -Ilib/include "test/fixtures/$name.c" -o "build/fixtures/lib$name.so"
done

if [ "$check" -eq 1 ]; then
  echo "sanitize: builds passed in $(( $(date +%s) - start )) s"
  exit 0
fi

echo "== Tests under the sanitizers"
# Bun's and libarrow's own allocations are not instrumented: leak checks and
# allocator-mismatch checks would only report them.
export LD_PRELOAD="$asan $ubsan"
export ASAN_OPTIONS="detect_leaks=0:alloc_dealloc_mismatch=0:abort_on_error=1:detect_odr_violation=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export FUZZ_CASES="${FUZZ_CASES:-3000}"
"$BUN" test --timeout 120000 test/core/bad_input.test.ts test/arrow/conversion_errors.test.ts test/native/producer_quirks.test.ts \
  test/arrow/import_types.test.ts test/native/owners.test.ts test/peers/fuzz.test.ts
echo "sanitize: passed in $(( $(date +%s) - start )) s"
