/**
 * bun-arrow-device/python: CPython in this process, the Arrow PyCapsule
 * protocol both ways with pyarrow, Polars, DuckDB and nanoarrow (installed
 * by `scripts/setup.sh --test`; a missing one fails here). Zero-copy is
 * proven by buffer addresses, lifetimes by exact release counts.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ptr, type Pointer } from "bun:ffi";
import { Data, Table, Utf8, makeData, tableFromArrays, tableToIPC, vectorFromArray } from "apache-arrow";
import { exportArray, exportStream, importTable } from "../../ts/index.ts";
import { ReleasedError } from "../../ts/core/errors.ts";
import { ImportedArray, ImportedStream, type RawArray } from "../../ts/raw.ts";
import { drainReleased } from "../../ts/diagnostics.ts";
import { counters } from "../helpers/leaks.ts";
import { PyObject, PythonError, PythonUnavailableError, fromPython, locatePython, schemaFromPython, toPython } from "../../ts/python.ts";
import { peer } from "../helpers/fixtures.ts";
import { collectUntil } from "../helpers/gc.ts";
import { pyJson, testPython } from "../helpers/python.ts";
import { typeCases } from "../helpers/type_cases.ts";
import { withCode } from "../helpers/errors.ts";

const py = testPython();

/** Every non-NULL buffer address of a raw node's tree (children, dictionaries). */
function rawAddresses(node: RawArray, out = new Set<number>()): Set<number> {
  for (let i = 0; i < node.nBuffers; i++) {
    const address = node.bufferAddress(i);
    if (address !== 0 && node.bufferSize(i) > 0) out.add(address);
  }
  for (const child of node.children) rawAddresses(child, out);
  if (node.dictionary) rawAddresses(node.dictionary, out);
  return out;
}

/** Every buffer address of an apache-arrow Data tree (stable once exported). */
function jsAddresses(data: Data, out = new Set<number>()): Set<number> {
  for (const buffer of [data.values, data.valueOffsets, data.nullBitmap, data.typeIds] as (Uint8Array | undefined)[]) {
    if (buffer && buffer.byteLength > 0) out.add(ptr(buffer));
  }
  for (const buffer of (data as unknown as { variadicBuffers?: readonly Uint8Array[] }).variadicBuffers ?? []) if (buffer.byteLength > 0) out.add(ptr(buffer));
  for (const child of data.children) jsAddresses(child, out);
  if (data.dictionary) for (const d of data.dictionary.data) jsAddresses(d, out);
  return out;
}

function shimDelta<T>(run: () => T): { result: T; delta: Record<string, number> } {
  const before = py.counters();
  const result = run();
  const after = py.counters();
  const delta = Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - before[k as keyof typeof before]]));
  return { result, delta };
}

function pythonGc(): void {
  py.exec("gc.collect()");
}

/** The library's counters once garbage left by earlier tests is collected
 * (they stop changing over three GC rounds), so a test can compare exactly. */
async function settledCounters(): Promise<ReturnType<typeof counters>> {
  pythonGc();
  let last = JSON.stringify(counters());
  let rounds = 0;
  await collectUntil(() => {
    const now = JSON.stringify(counters());
    rounds = now === last ? rounds + 1 : 0;
    last = now;
    return rounds >= 3;
  });
  return counters();
}

describe("finding libpython", () => {
  test("an explicit file that does not exist is a typed error naming it", () => {
    expect(() => locatePython({ libpython: "/nonexistent/libpython3.99.so" })).toThrow(PythonUnavailableError);
    try {
      locatePython({ libpython: "/nonexistent/libpython3.99.so" });
    } catch (error) {
      expect((error as PythonUnavailableError).tried).toEqual(["options.libpython=/nonexistent/libpython3.99.so: no such file"]);
    }
  });

  test("no python on PATH is a typed error listing what was tried", () => {
    try {
      locatePython({ python: "python-that-does-not-exist-here" });
      throw new Error("expected an error");
    } catch (error) {
      expect(error).toBeInstanceOf(PythonUnavailableError);
      expect((error as PythonUnavailableError).tried).toEqual(["python-that-does-not-exist-here: not found on PATH"]);
      expect((error as Error).message).toContain("ARROW_DEVICE_LIBPYTHON");
    }
  });

  test("a static-only Python build is refused with what was tried", () => {
    const dir = mkdtempSync(join(tmpdir(), "abd-static-python-"));
    using _dir = { [Symbol.dispose]: () => rmSync(dir, { recursive: true, force: true }) };
    const fake = join(dir, "python3-static");
    const report = { version: "3.99.0", shared: 0, ldlibrary: "libpython3.99.a", instsoname: null, libdir: dir, multiarch: null, base_prefix: dir, path: [] };
    writeFileSync(fake, `#!/bin/sh\necho '${JSON.stringify(report)}'\n`);
    chmodSync(fake, 0o755);
    try {
      locatePython({ python: fake });
      throw new Error("expected an error");
    } catch (error) {
      expect(error).toBeInstanceOf(PythonUnavailableError);
      expect((error as Error).message).toContain("static-only");
      expect((error as PythonUnavailableError).tried.at(-1)).toContain("Py_ENABLE_SHARED=0, LDLIBRARY=libpython3.99.a");
    }
  });

  test("the interpreter in this process is the one found", () => {
    expect(py.libpython).toMatch(/libpython3\.\d+/);
    expect(pyJson<string>(py, "__import__('pyarrow').__version__")).toBe("26.0.1");
  });

  test("Python exceptions are typed errors with the Python type", () => {
    try {
      py.exec("raise KeyError('nope')");
      throw new Error("expected an error");
    } catch (error) {
      expect(error).toBeInstanceOf(PythonError);
      expect((error as PythonError).pythonType).toBe("KeyError");
      expect((error as PythonError).pythonMessage).toBe("'nope'");
    }
  });
});

describe("pyarrow to JS (fromPython)", () => {
  test("every pyarrow type: zero-copy (same addresses), fully validated, and back to pyarrow unchanged and zero-copy", () => {
    py.exec("src = all_pyarrow_types().slice(1, 4)");
    using batch = py.eval("src");
    const names = pyJson<string[]>(py, "src.schema.names");
    const addresses = pyJson<number[][]>(py, "batch_addresses(src)");
    expect(names.length).toBeGreaterThanOrEqual(50);
    using imported = fromPython(batch, { validation: "full" }) as ImportedArray;
    expect(imported).toBeInstanceOf(ImportedArray);
    expect(imported.deviceTypeName).toBe("CPU"); // __arrow_c_device_array__ was preferred
    names.forEach((name, i) => {
      const ours = rawAddresses(imported.root.child(i));
      for (const address of addresses[i]) expect({ name, found: ours.has(address) }).toEqual({ name, found: true });
    });
    using back = toPython(imported);
    expect(pyJson(py, "pa.record_batch(back).equals(src, check_metadata=True)", { back })).toBe(true);
    expect(pyJson(py, "batch_addresses(pa.record_batch(back)) == batch_addresses(src)", { back })).toBe(true);
  });

  test("a chunked table as a stream: every batch zero-copy, the stream and each batch released once under the GIL", () => {
    py.exec("tbl = pa.Table.from_batches([all_pyarrow_types(), all_pyarrow_types().slice(2, 3)])\nbase = pa.total_allocated_bytes()");
    const { result: rows, delta } = shimDelta(() => {
      using table = py.eval("tbl");
      using stream = fromPython(table) as ImportedStream;
      expect(stream).toBeInstanceOf(ImportedStream);
      const expected = pyJson<number[][][]>(py, "[batch_addresses(b) for b in tbl.to_batches()]");
      let rows = 0;
      let index = 0;
      for (const raw of stream) {
        expected[index].forEach((column, i) => {
          const ours = rawAddresses(raw.root.child(i));
          for (const address of column) expect(ours.has(address)).toBe(true);
        });
        rows += raw.root.length;
        raw.dispose();
        index++;
      }
      return rows;
    });
    expect(rows).toBe(9);
    // One stream (wrapped, released once) and per batch one array; the
    // stream's schema is one more struct released under the GIL.
    expect(delta.imports).toBe(1);
    expect(delta.wrappedReleases).toBe(1 + 2 + 1);
  });

  test("the producer's memory is freed exactly when the last JS view goes (pa.total_allocated_bytes)", () => {
    py.exec("base = pa.total_allocated_bytes()\nbig = pa.record_batch({'v': pa.array(range(200_000), pa.int64())})");
    const held = pyJson<number>(py, "pa.total_allocated_bytes() - base");
    expect(held).toBeGreaterThanOrEqual(1_600_000);
    const { delta } = shimDelta(() => {
      using big = py.eval("big");
      const imported = fromPython(big) as ImportedArray;
      py.exec("del big\ngc.collect()");
      expect(pyJson<number>(py, "pa.total_allocated_bytes() - base")).toBeGreaterThanOrEqual(held); // JS holds it
      expect(imported.root.child(0).buffer(1)[199_999]).toBe(199_999n);
      imported.dispose();
    });
    expect(pyJson<number>(py, "pa.total_allocated_bytes() - base")).toBe(0);
    expect(delta).toMatchObject({ imports: 1, wrappedReleases: 2 });
  });

  test("a release on another native thread takes the GIL (the JS thread does not hold it)", () => {
    py.exec("base = pa.total_allocated_bytes()\nthreaded = pa.record_batch({'v': pa.array(range(50_000), pa.int32())})");
    const { delta } = shimDelta(() => {
      using source = py.eval("threaded");
      py.exec("del threaded");
      const imported = fromPython(source) as ImportedArray;
      const exported = imported.reexport();
      imported.dispose(); // the re-export now holds the producer's data alone
      const held = peer.peer_take(exported.schema, exported.array);
      exported.release();
      expect(pyJson<number>(py, "pa.total_allocated_bytes() - base")).toBeGreaterThan(0);
      peer.peer_release_held_on_thread(held as Pointer); // joins a thread that drops the last reference
    });
    pythonGc();
    expect(pyJson<number>(py, "pa.total_allocated_bytes() - base")).toBe(0);
    expect(delta).toMatchObject({ imports: 1, wrappedReleases: 2 });
  });

  test("a capsule whose struct was already moved out is a ReleasedError, for arrays and both stream kinds; nothing is read", () => {
    py.exec([
      "class Replay:",
      "    def __init__(self, method, made):",
      "        self.method, self.made = method, made",
      "    def __getattr__(self, name):",
      "        if name != self.method: raise AttributeError(name)",
      "        return lambda requested_schema=None: self.made",
    ].join("\n"));
    using table = toPython(tableFromArrays({ n: Int32Array.from([1, 2, 3]) }));
    const sources: [string, string][] = [
      ["__arrow_c_stream__", "pa.table({'n': [1, 2, 3]}).__arrow_c_stream__()"],
      ["__arrow_c_device_stream__", "_abd_t.__arrow_c_device_stream__()"],
      ["__arrow_c_array__", "pa.record_batch({'n': [1, 2, 3]}).__arrow_c_array__()"],
    ];
    for (const [method, make] of sources) {
      using replay = py.eval(`Replay('${method}', ${make})`, { _abd_t: table });
      const first = fromPython(replay); // moves the struct out of the capsule
      first[Symbol.dispose]();
      expect(() => fromPython(replay), method).toThrow(withCode("released"));
    }
    pythonGc();
  });

  test("fromPython forwards the validation level: invalid UTF-8 passes default and is refused at full", () => {
    const make = "pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(bytes([0,0,0,0, 1,0,0,0, 2,0,0,0])), pa.py_buffer(b'A\\xff')])";
    using accepted = py.eval(make);
    using imported = fromPython(accepted, { validation: "default" }) as ImportedArray;
    expect(imported.root.length).toBe(2);
    imported.dispose();
    using refused = py.eval(make);
    expect(() => fromPython(refused, { validation: "full" })).toThrow(withCode("invalid_layout"));
    using again = py.eval(make);
    expect(() => fromPython(again, { validation: "full" })).toThrow("string 1 is not valid UTF-8");
    pythonGc();
  });

  test("str() of any length, multi-byte characters across the first buffer's end included", () => {
    for (const prefix of [4094, 4095, 4096, 9000]) {
      using text = py.eval(`'a' * ${prefix} + (chr(0xe9) + chr(0x20ac) + chr(0x1f600)) * 3 + 'z'`);
      const expected = "a".repeat(prefix) + "\u00e9\u20ac\u{1f600}".repeat(3) + "z";
      expect(text.toString()).toBe(expected);
    }
    using nul = py.eval("'x\\0y'");
    expect(nul.toString()).toBe("x\0y");
  });

  test("schemas: __arrow_c_schema__ into an owned CSchema", () => {
    using schema = py.eval("pa.schema([pa.field('a', pa.int32(), nullable=False)], metadata={'k': 'v'})");
    using c = schemaFromPython(schema);
    expect(c.format).toBe("+s");
    expect(c.child(0).format).toBe("i");
    expect(c.child(0).name).toBe("a");
  });

  test("objects without the protocol, and methods that raise, are typed errors; nothing is imported", () => {
    using plain = py.eval("object()");
    expect(() => fromPython(plain)).toThrow(/implements no Arrow PyCapsule method/);
    py.exec("class Bad:\n    def __arrow_c_array__(self, requested_schema=None):\n        raise ValueError('no data today')");
    using bad = py.eval("Bad()");
    expect(() => fromPython(bad)).toThrow(/__arrow_c_array__\(\) raised ValueError: no data today/);
    py.exec("class Wrong:\n    def __arrow_c_stream__(self, requested_schema=None):\n        return pa.array([1]).__arrow_c_array__()[0]");
    using wrong = py.eval("Wrong()");
    expect(() => fromPython(wrong)).toThrow(/PyCapsule named "arrow_array_stream"/);
    pythonGc();
    expect(() => fromPython({} as PyObject)).toThrow(/expected a PyObject/);
  });
});

/** Types pyarrow's Python API cannot represent (its DataType wrapper has no
 * class for them: KeyError); nanoarrow checks them below. */
const notInPyarrowPython = new Set(["interval_months", "interval_day_time"]);

describe("JS to pyarrow (toPython)", () => {
  for (const [name, typeCase] of Object.entries(typeCases).filter(([name]) => !notInPyarrowPython.has(name))) {
    test(`${name}: pyarrow reads JS memory in place and sees apache-arrow's own IPC values`, () => {
      const vector = typeCase.make();
      const table = new Table({ [name]: vector });
      const dir = mkdtempSync(join(tmpdir(), "abd-ipc-"));
      using _dir = { [Symbol.dispose]: () => rmSync(dir, { recursive: true, force: true }) };
      writeFileSync(join(dir, "t.arrow"), tableToIPC(table, "stream"));
      using o = toPython(table.batches[0]);
      const js = new Set<number>();
      for (const data of vector.data) jsAddresses(data, js);
      py.exec(`got = pa.record_batch(o)\nwant = pa.ipc.open_stream(${JSON.stringify(join(dir, "t.arrow"))}).read_all().to_batches()[0]`, { o });
      expect(pyJson(py, "same(got, want)")).toBe(true);
      expect(pyJson(py, "str(got.schema.field(0).type)")).toBe(pyJson(py, "str(want.schema.field(0).type)"));
      for (const address of pyJson<number[]>(py, "sorted(buffer_addresses(got.column(0)))")) expect(js.has(address)).toBe(true);
      py.exec("del got, want");
    });
  }

  test("a Table is a stream Python can read again and again; capsules are freed once each", () => {
    const table = tableFromArrays({ x: new Float64Array([1.5, 2.5, 3.5]), y: new Int32Array([7, 8, 9]) });
    const { delta } = shimDelta(() => {
      using o = toPython(table);
      for (let i = 0; i < 3; i++) expect(pyJson(py, "pa.table(o).column('y').to_pylist()", { o })).toEqual([7, 8, 9]);
      expect(pyJson(py, "pa.table(o).column('x').chunk(0).buffers()[1].address", { o })).toBe(ptr(table.getChild("x")!.data[0].values));
      pythonGc();
    });
    expect(delta).toMatchObject({ capsulesMade: 3 + 1, capsulesFreed: 3 + 1, capsulesReleased: 0, sourcesLive: 0, streamsLive: 0 });
  });

  test("capsules dropped unconsumed are released by their destructor, once", async () => {
    const batch = tableFromArrays({ v: new Int32Array([1, 2, 3]) }).batches[0];
    const before = await settledCounters();
    const { delta } = shimDelta(() => {
      using o = toPython(batch);
      expect(counters().js_retained_exports).toBe(before.js_retained_exports + 1); // the JS buffers, held for Python
      py.exec("s, a = o.__arrow_c_array__()\nd = o.__arrow_c_device_array__()\nsc = o.__arrow_c_schema__()\ndel s, a, d, sc", { o });
    });
    expect(delta).toMatchObject({ capsulesMade: 5, capsulesFreed: 5, capsulesReleased: 5, sourcesLive: 0 });
    expect(counters()).toEqual(before); // every export and owner released
  });

  test("requested_schema is accepted and ignored; unknown keyword arguments are refused (the kwargs rule)", () => {
    using o = toPython(tableFromArrays({ v: new Int32Array([1, 2, 3]) }).batches[0]);
    expect(pyJson(py, "str(pa.record_batch(o.__arrow_c_array__(requested_schema=pa.schema([('v', pa.int64())]).__arrow_c_schema__()) and o).schema)", { o }))
      .toBe("v: int32 not null");
    expect(pyJson(py, "len(o.__arrow_c_device_array__(future_option=None))", { o })).toBe(2);
    expect(() => py.exec("o.__arrow_c_device_array__(future_option=1)", { o })).toThrow(/NotImplementedError: bun_arrow_device: unsupported keyword argument\(s\): \['future_option'\]/);
    pythonGc();
  });

  test("a one-shot JS stream (a generator) is read once; a second read is a Python ValueError", () => {
    const batches = tableFromArrays({ v: new Int32Array([1, 2, 3, 4]) }).batches;
    function* produce() { yield* batches; yield* batches; }
    using o = toPython(produce());
    expect(pyJson(py, "pa.table(o).column('v').to_pylist()", { o })).toEqual([1, 2, 3, 4, 1, 2, 3, 4]);
    expect(() => py.exec("pa.table(o)", { o })).toThrow(/ValueError: bun_arrow_device: this stream was already exported/);
    pythonGc();
  });

  test("this library's Python objects read back with fromPython: device methods preferred, the same memory", () => {
    const table = tableFromArrays({ v: new Int32Array([3, 4, 5]) });
    using batch = toPython(table.batches[0]);
    using array = fromPython(batch) as ImportedArray;
    expect(array).toBeInstanceOf(ImportedArray);
    expect(array.root.child(0).bufferAddress(1)).toBe(ptr(table.getChild("v")!.data[0].values));
    using plain = fromPython(batch, { method: "array" }) as ImportedArray;
    expect(plain.deviceId).toBe(-1); // a plain ArrowArray import
    using stream = toPython(table);
    using imported = fromPython(stream) as ImportedStream;
    expect(imported.kind).toBe("device_stream");
    const raw = imported.next()!;
    expect(raw.root.child(0).bufferAddress(1)).toBe(ptr(table.getChild("v")!.data[0].values));
    raw.dispose();
    using plainStream = fromPython(stream, { method: "stream" }) as ImportedStream;
    expect(plainStream.kind).toBe("stream");
    expect(() => fromPython(batch, { method: "stream" })).toThrow(/has no __arrow_c_stream__ method/);
  });

  test("schemas and this library's own handles", () => {
    const table = tableFromArrays({ v: new Int32Array([5, 6]) });
    using schema = toPython(table.schema);
    expect(pyJson(py, "str(pa.schema(s))", { s: schema })).toBe("v: int32 not null");
    const exported = exportArray(table.batches[0], { as: "array" });
    using fromHandle = toPython(exported);
    expect(exported.arrayReleased).toBe(true); // moved, as any consumer does
    exported.release();
    expect(pyJson(py, "pa.record_batch(o).column(0).to_pylist()", { o: fromHandle })).toEqual([5, 6]);
    using fromStream = toPython(exportStream(table));
    expect(pyJson(py, "pa.table(o).num_rows", { o: fromStream })).toBe(2);
    expect(() => toPython(42)).toThrow(/expected Arrow data/);
    pythonGc();
  });
});

/** What each peer cannot read, whoever hands it the data (checked: it
 * fails the same way when pyarrow hands it over, or crashes the process). */
const notInPolars: Record<string, string> = {
  decimal32: "Polars 2.1 aborts the process on 32-bit decimals", decimal64: "Polars 2.1 aborts the process on 64-bit decimals",
  decimal256: "Polars: 'Decimal scale is not a valid integer'", timestamp_ns_offset: "Polars cannot parse the time zone '+07:30'",
  interval_months: "unsupported by Polars", interval_day_time: "unsupported by Polars", interval_month_day_nano: "unsupported by Polars",
  dense_union: "unsupported by Polars", sparse_union: "unsupported by Polars",
};
const notInDuckdb: Record<string, string> = {
  float16: "unsupported by DuckDB", decimal256: "unsupported by DuckDB", interval_day_time: "DuckDB cannot convert it",
  dense_union: "unsupported by DuckDB", sparse_union: "DuckDB: 'union tag out of range' (also from pyarrow)",
};

describe("JS to Polars and DuckDB", () => {
  for (const [name, typeCase] of Object.entries(typeCases)) {
    if (!(name in notInPolars)) {
      test(`Polars reads ${name} from toPython exactly as from pyarrow`, () => {
        using o = toPython(new Table({ [name]: typeCase.make() }));
        expect(pyJson(py, "pl.DataFrame(o).equals(pl.DataFrame(pa.table(o)))", { o })).toBe(true);
        pythonGc();
      });
    }
    if (!(name in notInDuckdb)) {
      test(`DuckDB reads ${name} from toPython exactly as from pyarrow`, () => {
        using o = toPython(new Table({ [name]: typeCase.make() }));
        using p = py.eval("pa.table(o)", { o });
        expect(pyJson(py, "same(duckdb.sql('select * from o').arrow().read_all(), duckdb.sql('select * from p').arrow().read_all())", { o, p })).toBe(true);
        pythonGc();
      });
    }
  }

  test("Polars imports JS memory in place: its columns export the JS buffers' addresses (pl.DataFrame and pl.from_arrow)", () => {
    const table = tableFromArrays({ x: new Float64Array([1.5, 2.5, 3.5]), n: new Int32Array([7, 8, 9]) });
    using o = toPython(table);
    for (const constructor of ["pl.DataFrame(o)", "pl.from_arrow(o)"]) {
      using df = py.eval(constructor, { o });
      using back = fromPython(df) as ImportedStream;
      const batch = back.next();
      expect(batch).not.toBeNull();
      expect(batch!.root.child(0).bufferAddress(1)).toBe(ptr(table.getChild("x")!.data[0].values));
      expect(batch!.root.child(1).bufferAddress(1)).toBe(ptr(table.getChild("n")!.data[0].values));
      batch!.dispose();
    }
    pythonGc();
  });

  test("DuckDB scans JS memory where it lies: a value changed in JS after toPython is what the next query sees", () => {
    const values = new Int32Array([1, 2, 3, 4]);
    const table = tableFromArrays({ v: values });
    using o = toPython(table);
    expect(pyJson(py, "duckdb.sql('select sum(v) from o').fetchall()[0][0]", { o })).toBe(10);
    (table.getChild("v")!.data[0].values as Int32Array)[0] = 101;
    expect(pyJson(py, "duckdb.sql('select sum(v) from o').fetchall()[0][0]", { o })).toBe(110);
    pythonGc();
  });

  test("the Table's streams and capsules are all released once DuckDB and Polars are done", () => {
    const table = tableFromArrays({ v: new Int32Array([1, 2, 3]) });
    const { delta } = shimDelta(() => {
      using o = toPython(table);
      py.exec("duckdb.sql('select * from o').fetchall()\npl.DataFrame(o)", { o });
      pythonGc();
    });
    drainReleased();
    expect(delta.capsulesMade).toBeGreaterThanOrEqual(2);
    expect(delta).toMatchObject({ capsulesFreed: delta.capsulesMade, sourcesLive: 0, streamsLive: 0 });
  });
});

describe("Polars and DuckDB to JS", () => {
  test("Polars (most dtypes): zero-copy, then back to Python the same as Polars' own export", () => {
    py.exec("df = polars_all_types()");
    using df = py.eval("df");
    const { delta } = shimDelta(() => {
      using stream = fromPython(df, { validation: "full" }) as ImportedStream;
      const expected = pyJson<number[][][]>(py, "[batch_addresses(b) for b in pa.table(df).to_batches()]");
      const names = pyJson<string[]>(py, "df.columns");
      const batches = [...stream];
      expect(batches.length).toBe(expected.length);
      batches.forEach((raw, b) => {
        expected[b].forEach((column, i) => {
          const ours = rawAddresses(raw.root.child(i));
          // Polars hands out its own buffers, except a Categorical's, which it builds per export.
          if (names[i] !== "cat") expect({ column: names[i], missing: column.filter((address) => !ours.has(address)) }).toEqual({ column: names[i], missing: [] });
        });
        raw.dispose();
      });
    });
    expect(delta).toMatchObject({ imports: 1 });
    using relayed = toPython(fromPython(df) as ImportedStream);
    expect(pyJson(py, "same(pa.table(r), pa.table(df))", { r: relayed })).toBe(true);
    pythonGc();
  });

  for (const setting of ["", "SET produce_arrow_string_view = true", "SET arrow_output_list_view = true", "SET arrow_large_buffer_size = true"]) {
    test(`DuckDB results of every type${setting ? ` (${setting})` : ""}: imported, then back to Python unchanged`, () => {
      py.exec(`con, rel = duckdb_all_types()\n${setting ? `con.execute(${JSON.stringify(setting)})` : ""}\nrel = con.sql(DUCKDB_ALL_TYPES)`);
      using rel = py.eval("rel");
      const { delta } = shimDelta(() => {
        using stream = fromPython(rel, { validation: "full" }) as ImportedStream;
        using relayed = toPython(stream);
        expect(pyJson(py, "same(pa.table(r), con.sql(DUCKDB_ALL_TYPES).arrow().read_all())", { r: relayed })).toBe(true);
        py.exec("del rel");
        pythonGc();
      });
      // Released once each, under the GIL: the stream, each array, and two
      // schemas (one fetched at import, one by pyarrow through the relay).
      const batches = pyJson<number>(py, "sum(1 for _ in con.sql(DUCKDB_ALL_TYPES).arrow())");
      expect(delta).toMatchObject({ imports: 1, wrappedReleases: 1 + 2 + batches, streamsLive: 0, sourcesLive: 0 });
      py.exec("con.close()\ndel con");
    });
  }

  test("Polars' Null column (n_buffers = 1, the spec says 0) is accepted, as Arrow C++ does (docs/validation.md); everything is released once", () => {
    using df = py.eval("pl.DataFrame({'n': [None, None], 'v': [1, 2]})");
    const { delta } = shimDelta(() => {
      using stream = fromPython(df, { validation: "full" }) as ImportedStream;
      const raw = stream.next()!;
      expect(raw.root.child(0).format).toBe("n");
      expect(raw.root.child(0).nBuffers).toBe(0); // read as the spec's layout
      raw.dispose();
      const table = importTable(fromPython(df) as ImportedStream);
      expect(table.getChild("n")!.toArray()).toEqual([null, null]);
      expect([...table.getChild("v")!]).toEqual([1n, 2n]);
    });
    pythonGc();
    // Two streams, two schemas, two arrays: each released once, under the GIL.
    expect(delta).toMatchObject({ imports: 2, streamsLive: 0, sourcesLive: 0 });
  });

  test("apache-arrow reads DuckDB's results through importTable", () => {
    using rel = py.eval("duckdb.sql('select range::integer as i, range::varchar as s from range(5)')");
    const table = importTable(fromPython(rel) as ImportedStream);
    expect(table.getChild("i")!.toArray()).toEqual(new Int32Array([0, 1, 2, 3, 4]));
    expect([...table.getChild("s")!]).toEqual(["0", "1", "2", "3", "4"]);
  });
});

/** nanoarrow 0.9 does not know these formats at all ("Unsupported Arrow type_id"). */
const notInNanoarrow = new Set(["decimal32", "decimal64"]);

describe("nanoarrow validates everything toPython produces (strictest level its Python API has)", () => {
  for (const [name, typeCase] of Object.entries(typeCases).filter(([name]) => !notInNanoarrow.has(name))) {
    test(`${name}: array, device array, sliced and child re-exports, stream`, () => {
      const vector = typeCase.make();
      const batch = new Table({ [name]: vector }).batches[0];
      const cases: [string, () => unknown][] = [
        ["export", () => exportArray(batch)],
        ["plain ArrowArray export", () => exportArray(batch, { as: "array" })],
        ["vector", () => vector],
      ];
      for (const [what, make] of cases) {
        using o = toPython(make());
        const [nodes, full] = pyJson<[number, number]>(py, "nanoarrow_full(o)", { o });
        expect({ what, nodes: nodes > 0, full: full > 0 }).toEqual({ what, nodes: true, full: true });
        expect(pyJson(py, "(lambda d: (d.device_type.value, d.array.length))(__import__('nanoarrow.device').device.c_device_array(o))", { o }))
          .toEqual([1, vector.length]);
      }
      using imported = ImportedArray.fromDeviceArray(...(() => { const e = exportArray(batch); return [e.schema, e.array] as const; })());
      for (const [what, derived] of [["re-export", imported], ["slice", imported.slice(1, 3)], ["child", imported.child(0)]] as const) {
        using o = toPython(derived);
        expect({ what, ok: pyJson<number[]>(py, "nanoarrow_full(o)", { o })[0] > 0 }).toEqual({ what, ok: true });
      }
      using stream = toPython(new Table({ [name]: vector }));
      expect(pyJson(py, "nanoarrow_stream(o)[:2]", { o: stream })).toEqual([1, vector.length]);
      using oneShot = toPython(exportStream([batch, batch][Symbol.iterator]()));
      expect(pyJson(py, "nanoarrow_stream(o)[:2]", { o: oneShot })).toEqual([2, 2 * vector.length]);
      pythonGc();
    });
  }

  test("the check can fail: decreasing offsets (first and last in bounds) are refused at the full level", () => {
    const bad = makeData({ type: new Utf8(), length: 2, nullCount: 0, valueOffsets: new Int32Array([0, 5, 2]), data: new Uint8Array([97, 98, 99, 100, 101]) });
    using o = toPython(bad);
    expect(() => py.exec("nanoarrow_full(o)", { o })).toThrow(/NanoarrowException.*Expected element size >= 0/);
    pythonGc();
  });
});

describe("no leaks", () => {
  test("1e5 cycles JS -> pyarrow -> JS: exact counters, producer memory back to baseline, bounded RSS", async () => {
    const batch = new Table({ v: vectorFromArray(new Int32Array([1, 2, 3, 4])), s: vectorFromArray(["a", "b", null, "d"], new Utf8()) }).batches[0];
    py.exec("base = pa.total_allocated_bytes()");
    const libraryBefore = await settledCounters();
    // Earlier tests' imports may still be waiting for the collector: let
    // their releases land first (bounded), so the deltas below are this
    // loop's alone.
    let before = py.counters();
    for (let round = 0, stable = 0; round < 50 && stable < 3; round++) {
      pythonGc();
      Bun.gc(true);
      drainReleased();
      await Bun.sleep(1);
      const now = py.counters();
      stable = now.wrappedReleases === before.wrappedReleases ? stable + 1 : 0;
      before = now;
    }
    const cycle = () => {
      using o = toPython(batch);
      using got = py.eval("pa.record_batch(o)", { o });
      using imported = fromPython(got) as ImportedArray;
      if (imported.root.child(0).buffer(1)[3] !== 4) throw new Error("wrong data");
    };
    for (let i = 0; i < 10_000; i++) cycle();
    pythonGc();
    Bun.gc(true);
    const rssWarm = process.memoryUsage.rss();
    for (let i = 0; i < 100_000; i++) cycle();
    pythonGc();
    Bun.gc(true);
    drainReleased();
    const grownMiB = (process.memoryUsage.rss() - rssWarm) / 2 ** 20;
    const after = py.counters();
    expect(after.capsulesMade - before.capsulesMade).toBe(110_000 * 2);
    expect(after.capsulesFreed - before.capsulesFreed).toBe(110_000 * 2);
    expect(after.capsulesReleased - before.capsulesReleased).toBe(0);
    expect(after.imports - before.imports).toBe(110_000);
    expect(after.wrappedReleases - before.wrappedReleases).toBe(110_000 * 2);
    expect(after.sourcesLive).toBe(0);
    expect(pyJson<number>(py, "pa.total_allocated_bytes() - base")).toBe(0);
    expect(counters()).toEqual(libraryBefore);
    expect(grownMiB).toBeLessThan(48);
    console.log(`python leak check: RSS grew ${grownMiB.toFixed(1)} MiB over 1e5 cycles`);
  }, 600_000);
});
