/**
 * Loading a device runtime (zig/device/) with the library path from the
 * environment. Bun's `process.env` is not the C environment (assignments
 * made in JS never reach getenv), so the path is read here and passed in.
 */
import { native } from "./library.ts";

/** Environment variables naming each runtime's library path. */
export const deviceLibraryEnvVars = {
  cuda: "ARROW_DEVICE_CUDA_LIBRARY",
  rocm: "ARROW_DEVICE_HIP_LIBRARY",
} as const;

// Arrow device types: CUDA 2, CUDA_HOST 3, CUDA_MANAGED 13; ROCM 10, ROCM_HOST 11.
const cudaTypes = new Set([2, 3, 13]);
const rocmTypes = new Set([10, 11]);

/** Loads the runtime serving `deviceType` unless it is loaded; returns the
 * library's status (the reason is its last error). */
export function loadDeviceRuntime(deviceType: number): number {
  const variable = cudaTypes.has(deviceType) ? deviceLibraryEnvVars.cuda : rocmTypes.has(deviceType) ? deviceLibraryEnvVars.rocm : null;
  const path = variable ? process.env[variable] : undefined;
  return native.abd_device_runtime_load(deviceType, path ? new TextEncoder().encode(`${path}\0`) : null);
}
