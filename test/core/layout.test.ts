/**
 * The ABI layout agrees in all three places: the Zig structs (comptime
 * asserts + manifest), the C header (compiled by zig cc in
 * test/fixtures/layout_probe.c), and the TS tables (ts/core/abi/layout.ts).
 */
import { describe, expect, test } from "bun:test";
import { constants } from "node:os";
import { Errno, layoutProblems, structLayouts, tsLayout, type ErrnoName } from "../../ts/core/abi/layout.ts";
import { Status } from "../../ts/core/errors.ts";
import { EIO, errnoOfException } from "../../ts/arrow/errno.ts";
import { ArrowDeviceError } from "../../ts/core/errors.ts";
import { native } from "../../ts/core/ffi/library.ts";
import { manifestText } from "../../ts/core/ffi/library.ts";
import { fixtureText, probe } from "../helpers/fixtures.ts";

const manifest = JSON.parse(manifestText());

describe("layout manifest", () => {
  test("the TS tables match the loaded library exactly", () => {
    expect(layoutProblems(manifestText())).toEqual([]);
  });

  test("the C header compiled by zig cc matches the library's manifest", () => {
    const fromHeader = JSON.parse(fixtureText(probe.probe_layout_json(), "probe_layout_json"));
    expect(fromHeader).toEqual(manifest.structs);
  });

  test("the header's device type macros match the manifest", () => {
    const fromHeader = JSON.parse(fixtureText(probe.probe_device_types_json(), "probe_device_types_json"));
    expect(fromHeader).toEqual(manifest.device_types);
    expect(Object.keys(fromHeader)).toHaveLength(14);
  });

  test("the async producer has the header's 40-byte layout, without release", () => {
    expect(manifest.structs.ArrowAsyncProducer.size).toBe(40);
    expect(manifest.structs.ArrowAsyncProducer.fields.release).toBeUndefined();
    expect(manifest.structs.ArrowAsyncProducer.fields.additional_metadata).toBe(24);
  });

  test("changing any single TS struct offset or size is detected", () => {
    let cases = 0;
    for (const [name, layout] of Object.entries(structLayouts)) {
      const sized = structuredClone(tsLayout);
      sized.structs[name].size += 8;
      expect(layoutProblems(manifestText(), sized).join("\n")).toContain(`${name} size`);
      for (const field of Object.keys(layout.fields)) {
        const tampered = structuredClone(tsLayout);
        tampered.structs[name].fields[field] += 8;
        const problems = layoutProblems(manifestText(), tampered);
        expect(problems).toHaveLength(1);
        expect(problems[0]).toContain(`${name}.${field}`);
        cases++;
      }
    }
    expect(cases).toBe(48); // every field of the 8 structs
  });

  test("changing a manifest offset on the library side is detected too", () => {
    const edited = JSON.parse(manifestText());
    edited.structs.ArrowDeviceArray.fields.sync_event = 104;
    const problems = layoutProblems(JSON.stringify(edited));
    expect(problems).toEqual(["ArrowDeviceArray.sync_event: TS has 96, the library has 104"]);
  });

  test("enum tables are compared too", () => {
    const edited = JSON.parse(manifestText());
    edited.device_types.ROCM = 11;
    edited.status.released = 42;
    delete edited.counters.live_owners;
    const problems = layoutProblems(JSON.stringify(edited)).join("\n");
    expect(problems).toContain("device_types.ROCM");
    expect(problems).toContain("status.released");
    expect(problems).toContain("counters.live_owners");
  });
});

describe("errno values come from the library, for its platform", () => {
  test("TS reads the errno table from the library's manifest, and it is this platform's (node:os agrees)", () => {
    const manifest = JSON.parse(manifestText()).errno as Record<ErrnoName, number>;
    expect(Errno).toEqual(manifest);
    const names = Object.keys(Errno) as ErrnoName[];
    expect(names.sort()).toEqual(["E2BIG", "ECANCELED", "EDEADLK", "EINVAL", "EIO", "ENODEV", "ENOMEM", "EOPNOTSUPP", "EPROTO"]);
    const host = constants.errno as Record<string, number>;
    for (const name of names) expect({ name, value: Errno[name] }).toEqual({ name, value: host[name] });
  });

  test("statuses map to those errno values, in Zig and in TS", () => {
    expect(native.abd_status_errno(Status.wrong_thread)).toBe(Errno.EDEADLK);
    expect(native.abd_status_errno(Status.unsupported)).toBe(Errno.EOPNOTSUPP);
    expect(native.abd_status_errno(Status.cancelled)).toBe(Errno.ECANCELED);
    expect(errnoOfException(new ArrowDeviceError(Status.invalid_layout, "x"))).toBe(Errno.EINVAL);
    expect(errnoOfException(new Error("no errno"))).toBe(EIO);
    expect(EIO).toBe(Errno.EIO);
  });

  test("a manifest without the errno table is reported", () => {
    const edited = JSON.parse(manifestText());
    delete edited.errno;
    expect(layoutProblems(JSON.stringify(edited))).toContain("errno: the library's manifest has no errno table");
  });
});
