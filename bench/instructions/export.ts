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
import { drive } from "./driver.ts";

const batch = tableFromArrays({ a: new Int32Array(1000) }).batches[0];
exportArray(batch).release();
exportArray(batch).release(); // the memo's first reuse makes its image
const template = internal.templateOf(batch.schema) as Pointer;
const image = internal.arrayImageOf(batch.data) as Pointer;

const per = 100;
const modes: Record<string, () => void> = {
  full() { for (let i = 0; i < per; i++) exportArray(batch).release(); },
  native() { for (let i = 0; i < per; i++) native.abd_export_slot_free(native.abd_export_slot_from_image(template, image, 0, 2), 2); },
};
drive(modes, per, 20_000);
