/**
 * The README's quick start: a Table out as an Arrow C stream and back,
 * zero-copy both ways.
 *
 *   bun examples/quick_start.ts
 */
import { tableFromArrays } from "apache-arrow";
import { exportStream, importTable } from "bun-arrow-device";

const table = tableFromArrays({ id: Int32Array.of(1, 2, 3), price: Float64Array.of(9.5, 3, 7.25) });

// Out: `out.stream` is a `struct ArrowDeviceArrayStream*` for any C, C++,
// Rust or Zig function. Nothing is copied: C reads the JS buffers.
using out = exportStream(table);

// In: any producer's stream (here, ours) is moved in and read as a Table.
const back = importTable(out.stream);
console.log(JSON.stringify(back.toArray()));
