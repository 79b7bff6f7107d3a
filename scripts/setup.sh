#!/usr/bin/env bash
# Installs the project's own pinned toolchain into project-local, git-ignored
# folders, then builds the library and the test fixtures. Re-running it is
# fast: each step is skipped when what it would install is already there.
#
#   bash scripts/setup.sh           Zig, Bun + npm packages, build
#   bash scripts/setup.sh --test    also pyarrow (Arrow C++ reference tests)
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
pip_install() { # <target dir> <requirement>
  local target=$1 requirement=$2
  rm -rf "$target.partial"
  python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
    --root-user-action=ignore --target "$target.partial" "$requirement"
  mv "$target.partial" "$target"
}

# Zig, from PyPI's ziglang wheel.
zig_dir="$toolchain/zig-$ZIG_VERSION"
if [ ! -x "$zig_dir/ziglang/zig" ]; then
  echo "setup: installing Zig $ZIG_VERSION into $zig_dir"
  pip_install "$zig_dir" "ziglang==$ZIG_VERSION"
fi

# Bun, apache-arrow, bun-types and typescript, exactly as package-lock.json
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
  echo "setup: installing npm packages (bun, apache-arrow, bun-types, typescript)"
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
fi

# apache-arrow at each end of the supported range (and the release below
# it), for test/arrow_versions.test.ts; the default stays node_modules'.
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

# Build: lib/<platform>/libarrow_device.so and build/fixtures/*.
export ZIG_GLOBAL_CACHE_DIR="$PWD/$toolchain/zig-cache"
export ZIG_LOCAL_CACHE_DIR="$PWD/.zig-cache"
"$zig_dir/ziglang/zig" build --prefix . --release=safe
if [ "$want_test_tools" = 1 ] && [ -f scripts/build-reference-shim.sh ]; then
  bash scripts/build-reference-shim.sh
fi
