#!/usr/bin/env bash
# The release libraries, one command, reproducible: cross-compiles
# libarrow_device for every platform id with the pinned Zig into
#   dist/native/<platform-id>/<library file>
# (ReleaseSafe, stripped, baseline CPU, glibc 2.17 symbol versions for the
# -gnu builds), then checks each file's format, CPU and exported abd_*
# functions against lib/include/arrow_device.h (scripts/native-check.ts).
# win32-x64 is not built: the library's platform code is POSIX
# (docs/building.md). Needs `bash scripts/setup.sh` first (Zig, Bun).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh

# <zig target> (the platform id comes from build.zig).
targets=(
  x86_64-linux-gnu.2.17
  x86_64-linux-musl
  aarch64-linux-gnu.2.17
  aarch64-linux-musl
  x86_64-macos
  aarch64-macos
)

stage=dist/.stage
rm -rf "$stage"
for target in "${targets[@]}"; do
  echo "build-dist: $target"
  "$ZIG" build --prefix "$stage" -Dtarget="$target" -Dfixtures=false -Dstrip=true --release=safe
done
rm -rf dist/native
mv "$stage/lib" dist/native
rm -rf "$stage"
# What the libraries were built from, by content: scripts/pack.ts packs
# them only while the native sources still have this digest.
"$BUN" scripts/pack.ts --sources-digest > dist/native/sources.sha256
(cd dist/native && find . -type f -printf '%P %s bytes\n' | sort)
"$BUN" scripts/native-check.ts dist/native
