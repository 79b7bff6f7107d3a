#!/usr/bin/env bash
# Installs the project's own pinned toolchain into project-local, git-ignored
# folders, then builds the library and the test fixtures. Re-running it is
# fast: each step is skipped when what it would install is already there.
#
#   bash scripts/setup.sh           Zig, Bun + npm packages, build
#   bash scripts/setup.sh --test    also pyarrow (Arrow C++ reference tests) and the
#                                   Python peers (Polars, DuckDB, nanoarrow; a shared libpython)
#
# Needs only python3 (pip), node (npm) and a network path to PyPI and npm.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/toolchain.env
source scripts/toolchain.env

want_test_tools=0
[ "${1:-}" = "--test" ] && want_test_tools=1

toolchain=.toolchain
mkdir -p "$toolchain"
pip_install() { # <target dir> <requirement> [pip options]
  local target=$1 requirement=$2
  shift 2
  rm -rf "$target.partial"
  python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
    --root-user-action=ignore --target "$target.partial" "$@" "$requirement"
  mv "$target.partial" "$target"
}

# Zig, from PyPI's ziglang wheel.
zig_dir="$toolchain/zig-$ZIG_VERSION"
if [ ! -x "$zig_dir/ziglang/zig" ]; then
  echo "setup: installing Zig $ZIG_VERSION into $zig_dir"
  pip_install "$zig_dir" "ziglang==$ZIG_VERSION"
fi

# Bun, apache-arrow, bun-types, typescript and DuckDB's C library (a test
# peer: @duckdb/node-bindings-linux-x64), exactly as package-lock.json
# pins them. Skipped when node_modules already holds every package the lock
# pins at its pinned version (npm's own record, node_modules/.package-lock.json),
# or when the lock is byte-identical to the one last installed (.lock-hash).
# Extra installed packages do not force a reinstall: `npm ci` empties
# node_modules first, and git worktrees of this repository may share one.
lock_hash=$(sha256sum package-lock.json | cut -d' ' -f1)
lock_installed() {
  node -e '
    const fs = require("fs");
    const read = (path) => JSON.parse(fs.readFileSync(path, "utf8")).packages;
    const wanted = read("package-lock.json");
    const installed = read("node_modules/.package-lock.json");
    for (const [path, entry] of Object.entries(wanted)) {
      if (path === "") continue;
      const have = installed[path];
      if (have === undefined && entry.optional) continue; // other platforms
      if (have === undefined || have.version !== entry.version) process.exit(1);
    }' 2>/dev/null
}
if [ "$(cat node_modules/.lock-hash 2>/dev/null)" != "$lock_hash" ] && ! lock_installed; then
  echo "setup: installing npm packages (bun, apache-arrow, bun-types, typescript, @duckdb/node-bindings-linux-x64)"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_hash" > node_modules/.lock-hash
fi
if ! node_modules/.bin/bun --version >/dev/null 2>&1; then
  # npm may have skipped bun's postinstall; use the platform package's binary.
  for candidate in node_modules/@oven/bun-*/bin/bun; do
    [ -x "$candidate" ] && cp "$candidate" node_modules/bun/bin/bun.exe && break
  done
fi

# pyarrow (Arrow C++ with headers) for the reference-implementation tests.
if [ "$want_test_tools" = 1 ]; then
  pyarrow_dir="$toolchain/pyarrow-$PYARROW_VERSION"
  if [ ! -d "$pyarrow_dir/pyarrow" ]; then
    echo "setup: installing pyarrow $PYARROW_VERSION into $pyarrow_dir"
    pip_install "$pyarrow_dir" "pyarrow==$PYARROW_VERSION"
  fi
  # Python peers of test/peers/python.test.ts: binary wheels only (nanoarrow's
  # sdist needs meson), each into its own ignored folder.
  for peer in "polars==$POLARS_VERSION" "duckdb==$DUCKDB_PYTHON_VERSION" "nanoarrow==$NANOARROW_PYTHON_VERSION"; do
    peer_dir="$toolchain/${peer%%==*}-${peer##*==}"
    if [ ! -d "$peer_dir/${peer%%==*}" ]; then
      echo "setup: installing $peer into $peer_dir"
      pip_install "$peer_dir" "$peer" --only-binary=:all:
    fi
  done
  # A shared libpython for bun-arrow-device/python (see toolchain.env).
  if ! python3 -c 'import os, sys, sysconfig as s
v = s.get_config_var
names = [n for n in (v("INSTSONAME"), v("LDLIBRARY")) if n and not n.endswith(".a")]
dirs = [d for d in (v("LIBDIR"), os.path.join(v("LIBDIR") or "", v("MULTIARCH") or ""), os.path.join(sys.base_prefix, "lib")) if d]
sys.exit(0 if any(os.path.exists(os.path.join(d, n)) for d in dirs for n in names) else 1)'; then
    minor=$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
    echo "setup: python3 has no shared libpython; installing Debian's libpython$minor"
    if [ ! -f "$toolchain/libpython-path" ]; then
      apt-get update -qq && apt-get install -y -qq --no-install-recommends "libpython$minor" >/dev/null
      found=$(ls /usr/lib/*/libpython"$minor".so.1* 2>/dev/null | head -1)
      [ -n "$found" ] || { echo "setup: no libpython$minor after installing it"; exit 1; }
      echo "$found" > "$toolchain/libpython-path"
    fi
  fi
fi

# ADBC drivers for test/peers/adbc_*.test.ts: each wheel is fetched with
# pip download (no dependencies, no install) and only its driver library
# is kept.
if [ "$want_test_tools" = 1 ]; then
  adbc_dir="${ADBC_DRIVER_DIR:-$toolchain/adbc-drivers-$ADBC_DRIVERS_VERSION}"
  for adbc_driver in sqlite postgresql flightsql; do
    adbc_lib="$adbc_dir/libadbc_driver_$adbc_driver.so"
    [ -f "$adbc_lib" ] && continue
    echo "setup: fetching adbc-driver-$adbc_driver $ADBC_DRIVERS_VERSION into $adbc_dir"
    mkdir -p "$adbc_dir"
    scratch=$(mktemp -d)
    python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
      -d "$scratch" "adbc-driver-$adbc_driver==$ADBC_DRIVERS_VERSION"
    python3 - "$scratch" "$adbc_driver" "$adbc_lib" <<'PY'
import glob, sys, zipfile
scratch, name, target = sys.argv[1:]
wheel = glob.glob(f"{scratch}/*.whl")[0]
member = f"adbc_driver_{name}/libadbc_driver_{name}.so"
with zipfile.ZipFile(wheel) as z, open(target + ".part", "wb") as out:
    out.write(z.read(member))
PY
    mv "$adbc_lib.part" "$adbc_lib" && rm -rf "$scratch"
  done
fi

# The Flight SQL server for test/peers/adbc_flightsql.test.ts, built with
# the Go toolchain from the module proxy; its module and build caches stay
# in .toolchain too.
if [ "$want_test_tools" = 1 ]; then
  flight_dir="$toolchain/flightsql-server-$FLIGHTSQL_SERVER_VERSION"
  if [ ! -x "$flight_dir/sqlite_flightsql_server" ]; then
    command -v go >/dev/null || { echo "setup: the Flight SQL tests need Go (go install builds their server)"; exit 1; }
    echo "setup: building sqlite_flightsql_server $FLIGHTSQL_SERVER_VERSION into $flight_dir"
    GOBIN="$PWD/$flight_dir" GOMODCACHE="$PWD/$toolchain/go-mod" GOCACHE="$PWD/$toolchain/go-cache" GOFLAGS=-modcacherw \
      go install "github.com/apache/arrow-go/v18/arrow/flight/flightsql/example/cmd/sqlite_flightsql_server@$FLIGHTSQL_SERVER_VERSION"
  fi
fi

# pyarrow's ADBC driver manager, the other side of `bun run bench -- --section adbc`.
if [ "$want_test_tools" = 1 ]; then
  adbc_dm_dir="$toolchain/adbc-driver-manager-$ADBC_DRIVERS_VERSION"
  if [ ! -d "$adbc_dm_dir/adbc_driver_manager" ]; then
    echo "setup: installing adbc-driver-manager $ADBC_DRIVERS_VERSION into $adbc_dm_dir"
    pip_install "$adbc_dm_dir" "adbc-driver-manager==$ADBC_DRIVERS_VERSION" --no-deps --only-binary=:all:
  fi
fi

# A PostgreSQL server for test/peers/adbc_postgresql.test.ts: the system's
# binaries (the test starts its own cluster, as a dedicated non-root user);
# Debian's postgresql package when absent and setup runs as root.
if [ "$want_test_tools" = 1 ] && ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: apt-get install postgresql"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends postgresql >/dev/null 2>&1 ||
      { apt-get update >/dev/null && apt-get install -y --no-install-recommends postgresql >/dev/null; }
  else
    echo "setup: warning: the PostgreSQL tests need a server (apt-get install postgresql)"
  fi
fi

# The release tests (test/release/dist.test.ts): objdump, qemu-user and an arm64
# glibc from Debian, installed with apt-get only when absent (CI runs as
# root on a fresh Debian machine), and Bun's own baseline-x64 and arm64
# binaries at the pinned version (npm pack, no install scripts) for
# scripts/qemu-smoke.sh.
if [ "$want_test_tools" = 1 ]; then
  missing=()
  command -v objdump >/dev/null || missing+=(binutils)
  { command -v qemu-x86_64-static || command -v qemu-x86_64; } >/dev/null &&
    { command -v qemu-aarch64-static || command -v qemu-aarch64; } >/dev/null || missing+=(qemu-user-static)
  [ -f /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ] || missing+=(libc6-arm64-cross)
  if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "setup: apt-get install ${missing[*]}"
      export DEBIAN_FRONTEND=noninteractive
      apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
        { apt-get update >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
    else
      echo "setup: warning: the release tests need ${missing[*]} (apt-get install ${missing[*]})"
    fi
  fi
  bun_version=$(node -p 'require("./package.json").devDependencies.bun')
  for bun_package in bun-linux-x64-baseline bun-linux-aarch64; do
    bun_dir="$toolchain/$bun_package-$bun_version"
    [ -x "$bun_dir/bin/bun" ] && continue
    echo "setup: fetching @oven/$bun_package@$bun_version into $bun_dir"
    scratch=$(mktemp -d)
    (cd "$scratch" && npm pack --silent "@oven/$bun_package@$bun_version" >/dev/null && tar xzf ./*.tgz)
    chmod +x "$scratch/package/bin/bun"
    rm -rf "$bun_dir" && mv "$scratch/package" "$bun_dir" && rm -rf "$scratch"
  done
fi

# apache-arrow at each end of the supported range (and the release below
# it), for test/arrow/arrow_versions.test.ts; the default stays node_modules'.
if [ "$want_test_tools" = 1 ]; then
  for version in $(printf '%s\n' "$APACHE_ARROW_LOWEST" "$APACHE_ARROW_HIGHEST" "$APACHE_ARROW_BELOW" | sort -u); do
    arrow_dir="$toolchain/apache-arrow-$version"
    if [ ! -f "$arrow_dir/node_modules/apache-arrow/package.json" ]; then
      echo "setup: installing apache-arrow $version into $arrow_dir"
      rm -rf "$arrow_dir.partial" && mkdir -p "$arrow_dir.partial"
      npm install --prefix "$arrow_dir.partial" --no-audit --no-fund --loglevel=error --no-package-lock "apache-arrow@$version" >/dev/null
      rm -rf "$arrow_dir" && mv "$arrow_dir.partial" "$arrow_dir"
    fi
  done
fi

# Build: lib/<platform-id>/libarrow_device.so and build/fixtures/*.
export ZIG_GLOBAL_CACHE_DIR="$PWD/$toolchain/zig-cache"
export ZIG_LOCAL_CACHE_DIR="$PWD/.zig-cache"
"$zig_dir/ziglang/zig" build --prefix . --release=safe
if [ "$want_test_tools" = 1 ] && [ -f scripts/build-reference-shim.sh ]; then
  bash scripts/build-reference-shim.sh
fi
