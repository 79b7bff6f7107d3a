/**
 * The loader: finds the library, explains what is missing, maps status
 * codes to typed errors with the library's own message.
 */
import { describe, expect, test } from "bun:test";
import { writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ArrowDeviceError, ImportedArray, InvalidArgumentError, ReleasedError, Status, libraryPath, platformDir } from "../ts/index.ts";
import { check, native } from "../ts/ffi/library.ts";
import { errorFor, statusName, type StatusName } from "../ts/errors.ts";

const bun = process.execPath;

function runWithLibrary(path: string) {
  const proc = Bun.spawnSync([bun, "-e", `import("${join(import.meta.dir, "..", "ts", "index.ts")}").then(() => console.log("loaded"), (e) => { console.log(e.name + ": " + e.message); })`], {
    env: { ...process.env, ARROW_DEVICE_LIBRARY: path },
  });
  return proc.stdout.toString() + proc.stderr.toString();
}

describe("library loader", () => {
  test("finds the library for this platform under lib/", () => {
    expect(libraryPath()).toEndWith(`lib/${platformDir()}/libarrow_device.so`);
  });

  test("the platform id names the C library on Linux (glibc here)", () => {
    expect(platformDir()).toBe(`linux-${process.arch}-gnu`);
  });

  test("a missing library names the file it looked for and the build command", () => {
    const out = runWithLibrary("/nonexistent/libarrow_device.so");
    expect(out).toContain("LibraryLoadError");
    expect(out).toContain("/nonexistent/libarrow_device.so");
    expect(out).toContain("bash scripts/setup.sh");
  });

  test("a file that is not a library for this platform is explained, not a crash", () => {
    const dir = mkdtempSync(join(tmpdir(), "abd-"));
    const fake = join(dir, "libarrow_device.so");
    writeFileSync(fake, "this is not an ELF file");
    const out = runWithLibrary(fake);
    expect(out).toContain("LibraryLoadError");
    expect(out).toContain(fake);
    expect(out).toContain("another platform");
  });
});

describe("status codes become typed errors", () => {
  test("each status maps to its class and keeps the code", () => {
    for (const [name, code] of Object.entries(Status)) {
      if (code === 0) continue;
      const error = errorFor(code, "why");
      expect(error).toBeInstanceOf(ArrowDeviceError);
      expect(error.code).toBe(name as StatusName);
      expect(error.status).toBe(code);
      expect(statusName(code)).toBe(name as StatusName);
    }
  });

  test("the message comes from the library's last error", () => {
    expect(() => ImportedArray.fromDeviceArray(null, null)).toThrow(InvalidArgumentError);
    try {
      ImportedArray.fromDeviceArray(null, null);
    } catch (error) {
      expect((error as Error).message).toBe("schema pointer is NULL");
    }
  });

  test("check() passes on ok and throws the typed error otherwise", () => {
    expect(() => check(0)).not.toThrow();
    const slot = native.abd_alloc_zeroed(72 + 128)!;
    // Both structs released (zeroed): importing them is a ReleasedError.
    expect(() => ImportedArray.fromDeviceArray(slot, slot + 72)).toThrow(ReleasedError);
    native.abd_free(slot);
  });
});
