/**
 * The device kinds as the TS layer reads them from the library's table
 * (zig/device/kinds.zig, through the manifest): the two mappers agree with
 * it both ways, and a table that differs from the TS `DeviceKind` names
 * is refused when it is read.
 */
import { describe, expect, test } from "bun:test";
import { kindOfDeviceType, libraryEnvVars, targetDeviceType, DeviceType } from "../../ts/device.ts";
import { deviceKindNames, deviceKindTable, readKindTable } from "../../ts/core/ffi/device_loader.ts";
import { manifestText } from "../../ts/core/ffi/library.ts";
import { LayoutMismatchError } from "../../ts/diagnostics.ts";

describe("device kinds from the library's table", () => {
  test("every kind maps to its device types and back", () => {
    expect(deviceKindTable.length).toBeGreaterThan(0);
    expect(Object.keys(libraryEnvVars).sort()).toEqual([...deviceKindNames].sort());
    for (const kind of deviceKindTable) {
      expect(targetDeviceType(kind.name)).toBe(kind.deviceType);
      expect(targetDeviceType(kind.name, "pinned")).toBe(kind.hostType);
      expect(kindOfDeviceType(kind.deviceType)).toBe(kind.name);
      expect(kindOfDeviceType(kind.hostType)).toBe(kind.name);
      expect(libraryEnvVars[kind.name]).toBe(kind.envVar);
      expect(kind.libraries.length).toBeGreaterThan(0);
      if (kind.managedType === null) {
        let code: unknown;
        try { targetDeviceType(kind.name, "managed"); } catch (error) { code = (error as { code?: unknown }).code; }
        expect(code).toBe("invalid_argument");
      } else {
        expect(targetDeviceType(kind.name, "managed")).toBe(kind.managedType);
        expect(kindOfDeviceType(kind.managedType)).toBe(kind.name);
      }
    }
    expect(kindOfDeviceType(DeviceType.CPU)).toBeNull();
    expect(kindOfDeviceType(DeviceType.METAL)).toBeNull();
  });

  test("the table the library exports is the one read", () => {
    expect(readKindTable(manifestText())).toEqual(deviceKindTable);
  });

  test("a table with a kind the TS names lack, or without one they have, is refused", () => {
    const manifest = JSON.parse(manifestText()) as { device_kinds: Record<string, unknown>[] };
    const planted = { ...manifest, device_kinds: [...manifest.device_kinds, { ...manifest.device_kinds[0], name: "metal", driver: "metal" }] };
    expect(() => readKindTable(JSON.stringify(planted))).toThrow(LayoutMismatchError);
    const fewer = { ...manifest, device_kinds: manifest.device_kinds.slice(1) };
    let problems: string[] = [];
    try { readKindTable(JSON.stringify(fewer)); } catch (error) { problems = (error as LayoutMismatchError).problems; }
    expect(problems.length).toBe(1);
    expect(problems[0]).toContain(`"${deviceKindNames[0]}"`);
  });
});
