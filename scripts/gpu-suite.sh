#!/usr/bin/env bash
# Runs the device test suites against a real GPU: the same files CI runs
# under the fake drivers (test/device/device_runtime.test.ts, test/device/device_gold.test.ts),
# with ARROW_DEVICE_REAL_GPU=1 so that libarrow_device loads the real
# libcuda.so.1 / libamdhip64.so (or what ARROW_DEVICE_CUDA_LIBRARY /
# ARROW_DEVICE_HIP_LIBRARY name) and fake-only assertions are left out.
#
#   bash scripts/gpu-suite.sh            build, detect GPUs, run
#   bash scripts/gpu-suite.sh --bench    also run bench/device.ts
#
# With no usable NVIDIA or AMD GPU it says so, with each runtime's reason,
# and exits 0 having run nothing.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null || { echo "gpu-suite: setup failed"; exit 1; }
source scripts/env.sh

# Each kind's library variable, from the library's table of device kinds.
vars=$("$BUN" -e 'const { libraryEnvVars } = await import("./ts/device.ts"); console.log(Object.values(libraryEnvVars).join(" "))') || { echo "gpu-suite: the library does not load"; exit 1; }
for var in $vars; do
  case "${!var:-}" in
    *fake_*) echo "gpu-suite: $var points at a fake driver (${!var}); unset it to test a real GPU"; exit 1 ;;
  esac
done

# Which runtimes load here, and why the others do not.
detect=$("$BUN" -e '
  const { deviceAvailability, libraryEnvVars } = await import("./ts/device.ts");
  for (const kind of Object.keys(libraryEnvVars)) {
    const a = deviceAvailability(kind);
    console.log(a.available ? `OK ${kind} ${a.deviceCount} device(s), ${a.library}, version ${a.version}` : `NO ${kind} ${a.reason}`);
  }
' 2>&1)
echo "$detect" | sed 's/^/gpu-suite: /'
kinds=$(echo "$detect" | awk '$1 == "OK" { printf "%s%s", sep, $2; sep = "," }')
if [ -z "$kinds" ]; then
  echo "gpu-suite: SKIPPED: no NVIDIA (CUDA) or AMD (ROCm) GPU is usable on this machine; nothing was run."
  exit 0
fi

echo "gpu-suite: running the device suites on: $kinds"
ARROW_DEVICE_REAL_GPU=1 ARROW_DEVICE_TEST_KINDS="$kinds" "$BUN" test --timeout 120000 \
  test/device/device_runtime.test.ts test/device/device_gold.test.ts
status=$?

if [ "${1:-}" = "--bench" ] && [ "$status" -eq 0 ]; then
  ARROW_DEVICE_BENCH_KINDS="$kinds" "$BUN" bench/device.ts
fi
exit "$status"
