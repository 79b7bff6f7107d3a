#!/usr/bin/env bash
# Runs test/smoke/native_smoke.ts with a release library under qemu-user,
# on a CPU or architecture this machine does not have:
#   bash scripts/qemu-smoke.sh x64     dist/native/linux-x64-gnu with Bun's
#                                      baseline x64 binary, qemu -cpu Nehalem
#                                      (SSE4.2, no AVX, no AVX-512)
#   bash scripts/qemu-smoke.sh arm64   dist/native/linux-arm64-gnu with Bun's
#                                      arm64 binary under qemu-aarch64, glibc
#                                      from Debian's libc6-arm64-cross
# Needs dist/native (bash scripts/build-dist.sh) and what
# `bash scripts/setup.sh --test` installs: qemu-user-static,
# libc6-arm64-cross, and Bun's @oven/bun-linux-* binaries in .toolchain/.
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:?usage: qemu-smoke.sh x64|arm64}

die() { echo "qemu-smoke: $*" >&2; exit 1; }
first_command() { for c in "$@"; do command -v "$c" && return 0; done; return 1; }

case "$arch" in
  x64) qemu_names=(qemu-x86_64-static qemu-x86_64); bun_package=bun-linux-x64-baseline; platform=linux-x64-gnu
       qemu_args=(-cpu Nehalem) ;;
  arm64) qemu_names=(qemu-aarch64-static qemu-aarch64); bun_package=bun-linux-aarch64; platform=linux-arm64-gnu
       qemu_args=()
       sysroot=/usr/aarch64-linux-gnu
       [ -f "$sysroot/lib/ld-linux-aarch64.so.1" ] || die "no arm64 glibc in $sysroot (apt-get install libc6-arm64-cross)"
       export QEMU_LD_PREFIX=$sysroot ;;
  *) die "unknown architecture $arch (x64 or arm64)" ;;
esac

qemu=$(first_command "${qemu_names[@]}") || die "no ${qemu_names[*]} (apt-get install qemu-user-static)"

bun_version=$(node -p 'require("./package.json").devDependencies.bun')
bun_dir=.toolchain/$bun_package-$bun_version
[ -x "$bun_dir/bin/bun" ] || die "no $bun_dir/bin/bun (run: bash scripts/setup.sh --test)"

library=$PWD/dist/native/$platform/libarrow_device.so
[ -f "$library" ] || die "no $library (run: bash scripts/build-dist.sh)"
echo "qemu-smoke: $qemu ${qemu_args[*]} $bun_dir/bin/bun test/smoke/native_smoke.ts (ARROW_DEVICE_LIBRARY=$library)"
ARROW_DEVICE_LIBRARY=$library BUN_RUNTIME_TRANSPILER_CACHE_PATH=0 \
  "$qemu" "${qemu_args[@]}" "$bun_dir/bin/bun" test/smoke/native_smoke.ts
