/**
 * Where the ADBC driver libraries of the tests are: DuckDB's in the
 * devDependency @duckdb/node-bindings-<platform>, the others extracted from
 * their PyPI wheels by `scripts/setup.sh --test` into
 * .toolchain/adbc-drivers-<ADBC_DRIVERS_VERSION>/ (ADBC_DRIVER_DIR overrides).
 * Also what the ADBC test files share: the per-test settle step, catching
 * a failure with the AdbcErrors it released, and pyarrow's ADBC DBAPI
 * (adbc_driver_manager, in a child python3) as the reference for results.
 */
import { expect } from "bun:test";
import { DateUnit, IntervalUnit, Type, makeVector, tableFromIPC, type Data, type DataType, type Field, type Table, type Vector } from "apache-arrow";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { native } from "../../ts/core/ffi/library.ts";

const root = resolve(import.meta.dir, "..", "..");

export const libduckdb = join(root, "node_modules/@duckdb", `node-bindings-${process.platform}-${process.arch}`, "libduckdb.so");

function driversVersion(): string {
  const env = readFileSync(join(root, "scripts/toolchain.env"), "utf8");
  return /^ADBC_DRIVERS_VERSION=(\S+)/m.exec(env)![1]!;
}

/** The path of `libadbc_driver_<name>.so`; throws with the setup command when missing. */
export function adbcDriver(name: "sqlite" | "postgresql" | "flightsql"): string {
  const dir = process.env.ADBC_DRIVER_DIR ?? join(root, ".toolchain", `adbc-drivers-${driversVersion()}`);
  const path = join(dir, `libadbc_driver_${name}.so`);
  if (!existsSync(path)) throw new Error(`${path} is missing: run bash scripts/setup.sh --test`);
  return path;
}

/** For afterEach: waits (bounded GC rounds) for every count to settle, and names what is left. */
export async function expectAdbcSettled(): Promise<void> {
  await expectSettled();
}

/** Runs `body` and returns the error it threw, with the AdbcErrors released meanwhile. */
export function adbcFailure(body: () => unknown): { error: unknown; released: number } {
  const before = native.abd_adbc_errors_released();
  try {
    body();
  } catch (error) {
    return { error, released: native.abd_adbc_errors_released() - before };
  }
  throw new Error("expected a failure");
}

// ---------------------------------------------------------------------------
// pyarrow's ADBC DBAPI as the reference
// ---------------------------------------------------------------------------

const dbapiScript = `
import json, sys
import pyarrow as pa
import adbc_driver_manager.dbapi as dbapi
args = json.loads(sys.argv[1])
conn = dbapi.connect(driver=args["driver"], entrypoint=args.get("entrypoint"), db_kwargs=args.get("dbKwargs") or {}, autocommit=True)
cur = conn.cursor()
for statement in args.get("setup") or []:
    cur.execute(statement)
cur.execute(args["sql"])
table = cur.fetch_arrow_table()
sink = pa.BufferOutputStream()
with pa.ipc.new_stream(sink, table.schema) as writer:
    writer.write_table(table)
cur.close()
conn.close()
sys.stdout.buffer.write(sink.getvalue().to_pybytes())
`;
import { expectSettled } from "./settled.ts";

/** The folders of pyarrow and adbc_driver_manager that setup.sh --test installs. */
export function dbapiPythonPath(): string[] {
  const env = readFileSync(join(root, "scripts/toolchain.env"), "utf8");
  const pin = (name: string) => new RegExp(`^${name}=(\\S+)`, "m").exec(env)![1]!;
  const dirs = [join(root, ".toolchain", `adbc-driver-manager-${pin("ADBC_DRIVERS_VERSION")}`), join(root, ".toolchain", `pyarrow-${pin("PYARROW_VERSION")}`)];
  for (const dir of dirs) if (!existsSync(dir)) throw new Error(`${dir} is missing: run bash scripts/setup.sh --test`);
  return dirs;
}

/** Runs `sql` (after `setup`) through pyarrow's adbc_driver_manager.dbapi
 * in a child python3, on the same driver, and reads the result back as
 * Arrow IPC bytes. */
export function dbapiQuery(options: { driver: string; entrypoint?: string; dbKwargs?: Record<string, string>; setup?: string[]; sql: string }): Table {
  const result = Bun.spawnSync(["python3", "-c", dbapiScript, JSON.stringify(options)], {
    env: { ...process.env, PYTHONPATH: dbapiPythonPath().join(":") },
    stdout: "pipe",
    stderr: "pipe",
  });
  if (result.exitCode !== 0) throw new Error(`adbc_driver_manager.dbapi failed (${result.exitCode}): ${result.stderr.toString()}`);
  return tableFromIPC(result.stdout);
}

/** A type with its children's names and nullability, e.g.
 * `List<Int32>[l?: Int32]`; timestamps name their unit and zone. */
function typeSignature(type: DataType): string {
  const children = (type.children ?? []) as Field[];
  return children.length === 0 ? String(type) : `${type}[${children.map((c) => `${c.name}${c.nullable ? "?" : ""}: ${typeSignature(c.type)}`).join(", ")}]`;
}

/** Bytes a fixed-width value takes, or 0 for other types. */
function fixedWidth(type: DataType): number {
  const t = type as DataType & { bitWidth?: number; precision?: number; unit?: number; byteWidth?: number };
  switch (type.typeId) {
    case Type.Int: case Type.Time: case Type.Decimal: return t.bitWidth! / 8;
    case Type.Float: return [2, 4, 8][t.precision!]!;
    case Type.Date: return t.unit === DateUnit.DAY ? 4 : 8;
    case Type.Timestamp: case Type.Duration: return 8;
    case Type.Interval: return t.unit === IntervalUnit.YEAR_MONTH ? 4 : t.unit === IntervalUnit.DAY_TIME ? 8 : 16;
    case Type.FixedSizeBinary: return t.byteWidth!;
    default: return 0;
  }
}

/** Value `i` of `data`, exactly: fixed-width values as their bytes (hex),
 * so that microseconds and decimals are compared whole; nested values
 * element by element. */
function exactCell(data: Data, i: number): unknown {
  if (!data.getValid(i)) return null;
  const width = fixedWidth(data.type);
  if (width > 0) {
    // apache-arrow's values start at the data's offset (only the
    // validity bitmap keeps it).
    const values = data.values as unknown as ArrayBufferView;
    if ((i + 1) * width > values.byteLength) throw new Error(`${data.type}: value ${i} is past the ${values.byteLength}-byte values buffer`);
    return Buffer.from(values.buffer, values.byteOffset + i * width, width).toString("hex");
  }
  if (data.type.typeId === Type.Struct) return data.children.map((child) => exactCell(child, i));
  const value = makeVector(data).get(i) as unknown;
  if (value instanceof Uint8Array) return [...value];
  if (value !== null && typeof value === "object" && "data" in (value as object)) return exactColumn(value as Vector);
  return value;
}

function exactColumn(vector: Vector): unknown[] {
  return vector.data.flatMap((data) => Array.from({ length: data.length }, (_, i) => exactCell(data, i)));
}

/** Field metadata in key order; extension metadata as parsed JSON (pyarrow
 * re-serializes a canonical extension's metadata, e.g. arrow.opaque's). */
function metadataOf(field: Field): [string, unknown][] {
  return [...field.metadata].sort(([a], [b]) => (a < b ? -1 : 1)).map(([key, value]) => {
    if (key !== "ARROW:extension:metadata") return [key, value];
    try {
      return [key, JSON.parse(value)];
    } catch {
      return [key, value];
    }
  });
}

/** Expects `ours` to equal `theirs` exactly: field names, types (with
 * units, zones and children), nullability, metadata, and every value. */
export function expectSameTable(ours: Table, theirs: Table): void {
  const shape = (t: Table) => t.schema.fields.map((f) => ({ name: f.name, type: typeSignature(f.type), nullable: f.nullable, metadata: metadataOf(f) }));
  expect(shape(ours)).toEqual(shape(theirs));
  expect(ours.numRows).toBe(theirs.numRows);
  for (let c = 0; c < ours.numCols; c++) {
    expect({ column: ours.schema.fields[c]!.name, values: exactColumn(ours.getChildAt(c)!) }).toEqual({ column: theirs.schema.fields[c]!.name, values: exactColumn(theirs.getChildAt(c)!) });
  }
}
