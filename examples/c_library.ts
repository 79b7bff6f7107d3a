/**
 * Recipe 1: a Bun app hands an apache-arrow Table to a C function and takes
 * a Table back, with no copy on the way out and none on the way in.
 *
 *   bun examples/c_library.ts [path/to/libdoubler.so]
 *
 * The C side is examples/c/doubler.c (built by `zig build` into
 * build/examples/ in a checkout; in an app, build it as the README shows:
 * ./libdoubler.so is found without an argument): `doubler_run(input,
 * output)` reads a table from one ArrowArrayStream and fills another with
 * a column "doubled" = 2 * x.
 */
import { dlopen, FFIType, ptr, suffix } from "bun:ffi";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Float64, Table, vectorFromArray } from "apache-arrow";
import { exportStream, importTable } from "bun-arrow-device";
import { structPointer } from "bun-arrow-device/raw";

// 1. Open the C library (any library speaking the Arrow C stream interface).
//    Given, or built in this folder as the README shows, or in a checkout.
const candidates = [join(process.cwd(), `libdoubler.${suffix}`), join(import.meta.dir, "..", "build", "examples", `libdoubler.${suffix}`)];
const libraryFile = process.argv[2] ?? candidates.find((file) => existsSync(file));
if (libraryFile === undefined || !existsSync(libraryFile)) {
  console.error(`c_library.ts needs libdoubler.${suffix}, built from the package's examples/c/doubler.c: cc -std=c11 -O2 -shared -fPIC -I node_modules/bun-arrow-device/lib/include node_modules/bun-arrow-device/examples/c/doubler.c -o libdoubler.${suffix} (then run this again, or pass the library's path)`);
  process.exit(2);
}
const doubler = dlopen(libraryFile, {
  doubler_run: { args: [FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  doubler_last_error: { args: [], returns: FFIType.cstring },
});

// 2. A table of two batches, with a null.
const x = vectorFromArray([1.5, null, 3, 4.25], new Float64());
const table = new Table({ x }).concat(new Table({ x: vectorFromArray([10, 20], new Float64()) }));

// 3. JS -> C: the table goes out as an ArrowArrayStream. C pulls its batches
//    zero-copy and moves the stream in (it releases it when done).
using input = exportStream(table, { as: "stream" });
// 4. C -> JS: C fills an ArrowArrayStream in memory we provide (5 pointers).
const output = new BigUint64Array(5);
const status = doubler.symbols.doubler_run(input.stream, ptr(output));
if (status !== 0) throw new Error(`doubler_run failed (${status}): ${doubler.symbols.doubler_last_error()}`);

// 5. Read the result as an apache-arrow Table: the stream is moved in and
//    released once read; each batch's memory stays C's until its views are
//    garbage-collected, then C's release frees it.
const result = importTable(structPointer("ArrowArrayStream", ptr(output)), { as: "stream" });

console.log(`sent ${table.numRows} rows in ${table.batches.length} batches: x = ${JSON.stringify([...table.getChild("x")!])}`);
console.log(`got back ${result.numRows} rows in ${result.batches.length} batches, schema { ${result.schema.fields.map((f) => `${f.name}: ${f.type}`).join(", ")} }`);
console.log(`doubled = ${JSON.stringify([...result.getChild("doubled")!])}`);
console.log(`input stream released by C: ${input.streamReleased}`);
