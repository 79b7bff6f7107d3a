/**
 * The export slot made last by `adoptExportSlot` (exported.ts), while its
 * handle is live: its trees were built natively by this library, so an
 * import of exactly its schema and array (c_structs.ts `takeStructs`)
 * reads them without the address probe. exported.ts notes the slot when a
 * handle adopts it and forgets it when the handle is released or joins the
 * safety net (which may free the slot without release()), so a slot named
 * here is never freed. One slot: the usual pattern is an export imported
 * at once, and the export's fixed cost stays two assignments.
 */
import { ArrowSchemaLayout } from "../core/abi/layout.ts";

/** Where an export slot's array struct starts: after its schema. */
export const exportArrayOffset = ArrowSchemaLayout.size; // 72: 8-byte aligned

let lastSlot = 0;
let lastSlotKind: "schema" | "array" | "device_array" = "schema";

/** Notes `address`, a slot of `kind` a handle just adopted. */
export function noteLiveExport(address: number, kind: "schema" | "array" | "device_array"): void {
  lastSlot = address;
  lastSlotKind = kind;
}

/** Forgets `address` if it is the slot noted last (its handle ends). */
export function forgetLiveExport(address: number): void {
  if (address === lastSlot) lastSlot = 0;
}

/** True when `schema` and `array` are the schema and the `arrayKind`
 * struct of the live export slot that was adopted last. */
export function isLiveExportPair(schema: number, array: number, arrayKind: "ArrowArray" | "ArrowDeviceArray"): boolean {
  return schema === lastSlot && schema !== 0 && array === schema + exportArrayOffset &&
    lastSlotKind === (arrayKind === "ArrowArray" ? "array" : "device_array");
}
