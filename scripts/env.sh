# Sourced by the scripts: paths of the project-local toolchain.
# shellcheck source=scripts/toolchain.env
source "$(dirname "${BASH_SOURCE[0]}")/toolchain.env"
PROJECT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ZIG="$PROJECT_ROOT/.toolchain/zig-$ZIG_VERSION/ziglang/zig"
BUN="$PROJECT_ROOT/node_modules/.bin/bun"
PYARROW_DIR="$PROJECT_ROOT/.toolchain/pyarrow-$PYARROW_VERSION"
export ZIG_GLOBAL_CACHE_DIR="$PROJECT_ROOT/.toolchain/zig-cache"
export ZIG_LOCAL_CACHE_DIR="$PROJECT_ROOT/.zig-cache"
