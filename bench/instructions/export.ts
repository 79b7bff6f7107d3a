/**
 * Driver for count.sh / jitprof.sh: `exportArray(batch).release()` of a
 * 1-column int32 batch of 1000 rows (the bench's row 3), `N` times after
 * a 20,000-cycle warm-up. Modes:
 *   full     exportArray + release
 *   native   the two native calls alone (slot from the memo's image, free)
 */
import type { Pointer } from "bun:ffi";
import { tableFromArrays } from "apache-arrow";
import { exportArray } from "../../ts/index.ts";
import { internal } from "../../ts/convert/export.ts";
import { native } from "../../ts/ffi/library.ts";

const mode = process.argv[2];
const iterations = Number(process.argv[3]);
const batch = tableFromArrays({ a: new Int32Array(1000) }).batches[0];
exportArray(batch).release();
exportArray(batch).release(); // the memo's first reuse makes its image
const template = internal.templateOf(batch.schema) as Pointer;
const image = internal.arrayImageOf(batch.data) as Pointer;

const modes: Record<string, (n: number) => void> = {
  full(n) { for (let i = 0; i < n; i++) exportArray(batch).release(); },
  native(n) { for (let i = 0; i < n; i++) native.abd_export_slot_free(native.abd_export_slot_from_image(template, image, 0, 2), 2); },
};
if (!(mode in modes)) throw new Error(`mode must be one of ${Object.keys(modes).join(", ")}`);
modes[mode](20_000);
modes[mode](iterations);
