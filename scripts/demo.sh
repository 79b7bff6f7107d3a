#!/usr/bin/env bash
# README command 1: set everything up, then run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
exec "$BUN" run examples/demo.ts "$@"
