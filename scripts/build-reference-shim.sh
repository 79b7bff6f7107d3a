#!/usr/bin/env bash
# Builds the Arrow C++ reference shim for the interoperability tests:
#   test/reference/arrow_shim.cc  ->  build/fixtures/libarrow_shim.so
# linked against the libarrow of the pinned pyarrow wheel, which
# `scripts/setup.sh --test` installs into .toolchain/pyarrow-<version>/.
#
# Compiled with the system g++, not zig c++: the wheel's libarrow is built
# with GCC against libstdc++ (new C++11 string ABI), and the shim passes
# std::string, std::shared_ptr and friends across that boundary. Arrow 26's
# headers need C++20. The wheel ships only libarrow.so.<soversion> (no
# unversioned libarrow.so symlink), so the library is linked by its full
# path; its SONAME puts libarrow.so.<soversion> in DT_NEEDED, found at run
# time through the rpath.
#
# Re-runs are instant: nothing happens unless the source, its header, this
# script or libarrow is newer than the output.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/env.sh
source scripts/env.sh

self=scripts/build-reference-shim.sh
source_file=test/reference/arrow_shim.cc
header_file=test/reference/arrow_shim.h
output=build/fixtures/libarrow_shim.so
wheel_dir="$PYARROW_DIR/pyarrow"
config_header="$wheel_dir/include/arrow/util/config.h"

die() { echo "build-reference-shim: $*" >&2; exit 1; }

[ "$(uname -s)" = Linux ] ||
  die "the reference shim is built on Linux only (this is $(uname -s)); the pyarrow wheel layout and linker flags here are Linux's"
[ -f "$config_header" ] ||
  die "pyarrow $PYARROW_VERSION is not installed in $PYARROW_DIR (run: bash scripts/setup.sh --test)"
so_version=$(sed -n 's/^#define ARROW_SO_VERSION "\([0-9]*\)"$/\1/p' "$config_header")
[ -n "$so_version" ] || die "no ARROW_SO_VERSION in $config_header"
libarrow="$wheel_dir/libarrow.so.$so_version"
[ -f "$libarrow" ] || die "the pyarrow wheel has no $libarrow"

up_to_date() {
  [ -f "$output" ] || return 1
  local input
  for input in "$source_file" "$header_file" "$self" "$libarrow"; do
    [ "$output" -nt "$input" ] || return 1
  done
}
if up_to_date; then exit 0; fi

cxx=${CXX:-g++}
command -v "$cxx" >/dev/null || die "needs a C++20 compiler with libstdc++ ($cxx not found; set CXX)"

# The string ABI must match libarrow's: it exports std::__cxx11 symbols
# when built with the new ABI (manylinux_2_28 wheels are).
# (grep -c, not -q: an early grep exit would fail the pipe under pipefail.)
cxx11_abi=1
if command -v nm >/dev/null; then
  cxx11_symbols=$(nm -D --defined-only "$libarrow" | grep -c '__cxx11' || true)
  [ "$cxx11_symbols" -gt 0 ] || cxx11_abi=0
fi

echo "build-reference-shim: compiling $output against Arrow C++ $PYARROW_VERSION ($cxx)"
mkdir -p "$(dirname "$output")"
# The rpath is relative to the shim ($ORIGIN), so the checkout can move;
# the absolute path is a fallback for copies of the .so made elsewhere.
relative_wheel_dir=$(realpath --relative-to="$(dirname "$output")" --no-symlinks "$wheel_dir")
"$cxx" -std=c++20 -D_GLIBCXX_USE_CXX11_ABI=$cxx11_abi -O1 -fPIC -shared -pthread \
  -fvisibility=hidden -Wall -Wextra -Werror \
  -isystem "$wheel_dir/include" -I test/reference \
  "$source_file" -o "$output.partial" \
  "$libarrow" -Wl,--no-undefined \
  -Wl,-rpath,"\$ORIGIN/$relative_wheel_dir" -Wl,-rpath,"$wheel_dir"
mv "$output.partial" "$output"
