/**
 * Each device runtime as the CLI reports it: available or not (and why),
 * its library, driver version and devices, and whether the library is one
 * of the project's fake drivers (test/fixtures/fake_*.c), which are CPU
 * stand-ins for tests: their figures are never GPU figures.
 */
import { FFIType } from "bun:ffi";
import { openLibrary } from "../core/ffi/bun_ffi.ts";
import { deviceKindNames, kindEntry } from "../core/ffi/device_loader.ts";
import { deviceAvailability, deviceRuntime, type DeviceInfo, type DeviceKind } from "../device/runtime.ts";

/** Every runtime the library can load (its table of device kinds). */
export const deviceKinds: readonly DeviceKind[] = deviceKindNames;

export type RuntimeReport = {
  kind: DeviceKind;
  available: boolean;
  /** Why it is not available (null when it is). */
  reason: string | null;
  /** The driver library that was loaded. */
  library: string | null;
  /** The driver's own version number (cuDriverGetVersion / hipDriverGetVersion). */
  driverVersion: number | null;
  /** The same as major.minor. */
  driverVersionText: string | null;
  /** True for the project's fake drivers: not a GPU. */
  fake: boolean;
  devices: DeviceInfo[];
};

/** The symbol every fake driver exports and no real driver does: it
 * returns the Arrow device type of the fake's device memory
 * (test/fixtures/fake_gpu.h). */
const fakeMarker = "abd_fake_gpu_driver";

/** Whether the library at `path` is a fake driver of `kind`. */
export function isFakeDriver(kind: DeviceKind, path: string): boolean {
  try {
    const probe = openLibrary(path, { [fakeMarker]: { args: [], returns: FFIType.i32 } });
    const deviceType = (probe.symbols[fakeMarker] as () => number)();
    probe.close();
    return deviceType === kindEntry(kind)!.deviceType;
  } catch {
    return false;
  }
}

/** The driver's version number as major.minor, scaled as the kind's
 * table entry says (CUDA: 12040 -> "12.4"; HIP: 60342134 -> "6.3"). */
function versionText(kind: DeviceKind, version: number): string {
  const [major, minor] = kindEntry(kind)!.versionScale;
  return `${Math.floor(version / major)}.${Math.floor((version % major) / minor)}`;
}

/** "not available: <why>" for an unavailable runtime, said once: the
 * reason's own "CUDA is not available: " lead is not repeated. */
export function unavailableText(report: RuntimeReport): string {
  const reason = report.reason ?? "no reason given";
  const lead = /^\S+ is (not available[^:]*): /.exec(reason);
  return lead === null ? `not available: ${reason}` : `${lead[1]}: ${reason.slice(lead[0].length)}`;
}

export function runtimeReport(kind: DeviceKind): RuntimeReport {
  const availability = deviceAvailability(kind);
  if (!availability.available) {
    return { kind, available: false, reason: availability.reason, library: null, driverVersion: null, driverVersionText: null, fake: false, devices: [] };
  }
  return {
    kind,
    available: true,
    reason: null,
    library: availability.library,
    driverVersion: availability.version,
    driverVersionText: versionText(kind, availability.version),
    fake: isFakeDriver(kind, availability.library),
    devices: deviceRuntime(kind).devices(),
  };
}

/** A runtime a benchmark may call a GPU. */
export function isRealGpu(report: RuntimeReport): boolean {
  return report.available && !report.fake && report.devices.length > 0;
}
