/**
 * The device kinds the library drives, read once from its manifest
 * ("device_kinds", built from the one table in zig/device/kinds.zig), and
 * loading a device runtime with the library path from the environment.
 * Bun's `process.env` is not the C environment (assignments made in JS
 * never reach getenv), so the path is read here and passed in.
 */
import { LayoutMismatchError } from "../errors.ts";
import { manifestText, native } from "./library.ts";

/**
 * A device runtime, by the name of its entry in the library's table: the
 * one TS spelling of the kinds, since a type cannot be read from the
 * library. `declaredKinds` holds the same names (the compiler keeps the
 * two equal), and this module checks them against the library's table
 * when it loads (`LayoutMismatchError` on a difference).
 */
export type DeviceKind = "cuda" | "rocm";
const declaredKinds: Record<DeviceKind, true> = { cuda: true, rocm: true };

/** One entry of the library's device-kind table. */
export type DeviceKindEntry = {
  readonly name: DeviceKind;
  /** Its driver module's name (zig/device/<driver>.zig); its fake driver
   * for tests is test/fixtures/fake_<driver>.c. */
  readonly driver: string;
  /** For messages: "CUDA". */
  readonly label: string;
  /** The Arrow device types of its device, pinned host and managed
   * memory (null: Arrow has none). */
  readonly deviceType: number;
  readonly hostType: number;
  readonly managedType: number | null;
  /** The environment variable naming its library's path. */
  readonly envVar: string;
  /** The library names tried in order when the variable is unset. */
  readonly libraries: readonly string[];
  /** Its version number as major.minor: `v / major`, `v % major / minor`. */
  readonly versionScale: readonly [major: number, minor: number];
};

type ManifestKind = {
  name: string; driver: string; label: string; device_type: number; host_type: number; managed_type: number | null;
  env_var: string; libraries: string[]; version_scale: [number, number];
};

/** The device-kind table of a manifest (JSON text); throws
 * `LayoutMismatchError` unless its kinds are the `DeviceKind` names. */
export function readKindTable(manifestJson: string): readonly DeviceKindEntry[] {
  const kinds = (JSON.parse(manifestJson) as { device_kinds?: ManifestKind[] }).device_kinds ?? [];
  const names = kinds.map((k) => k.name);
  const declared = Object.keys(declaredKinds);
  if ([...names].sort().join() !== [...declared].sort().join()) {
    throw new LayoutMismatchError([`device kinds: the library drives ${JSON.stringify(names)}, ts/core/ffi/device_loader.ts declares ${JSON.stringify(declared)}`]);
  }
  return Object.freeze(kinds.map((k) => Object.freeze({
    name: k.name as DeviceKind, driver: k.driver, label: k.label, deviceType: k.device_type, hostType: k.host_type, managedType: k.managed_type,
    envVar: k.env_var, libraries: Object.freeze([...k.libraries]), versionScale: Object.freeze([k.version_scale[0], k.version_scale[1]] as const),
  })));
}

/** The library's device kinds, in its table's order. */
export const deviceKindTable: readonly DeviceKindEntry[] = readKindTable(manifestText());

/** The kinds' names, in the table's order. */
export const deviceKindNames: readonly DeviceKind[] = Object.freeze(deviceKindTable.map((k) => k.name));

/** The entry named `kind`, or undefined. */
export function kindEntry(kind: string): DeviceKindEntry | undefined {
  return deviceKindTable.find((k) => k.name === kind);
}

/** The entry serving arrays of `deviceType` (device, pinned or managed
 * memory), or undefined. */
export function kindEntryOfDeviceType(deviceType: number): DeviceKindEntry | undefined {
  return deviceKindTable.find((k) => k.deviceType === deviceType || k.hostType === deviceType || k.managedType === deviceType);
}

/** Environment variables naming each runtime's library path. */
export const deviceLibraryEnvVars: Record<DeviceKind, string> = Object.freeze(
  Object.fromEntries(deviceKindTable.map((k) => [k.name, k.envVar])) as Record<DeviceKind, string>,
);

/** Loads the runtime serving `deviceType` unless it is loaded; returns the
 * library's status (the reason is its last error). */
export function loadDeviceRuntime(deviceType: number): number {
  const variable = kindEntryOfDeviceType(deviceType)?.envVar;
  const path = variable ? process.env[variable] : undefined;
  return native.abd_device_runtime_load(deviceType, path ? new TextEncoder().encode(`${path}\0`) : null);
}
