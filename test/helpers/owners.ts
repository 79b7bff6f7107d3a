/**
 * test/fixtures/owners_peer.c (producers of every kind, a consumer that
 * reads no device memory, a multi-threaded release stress runner) and small
 * helpers shared by the owner / re-export / relay tests.
 */
import { structPointer, type StructPointer } from "../../ts/raw.ts";
import { FFIType, type Pointer } from "bun:ffi";
import { openLibrary } from "../../ts/core/ffi/bun_ffi.ts";
import { ArrowSchemaLayout } from "../../ts/core/abi/layout.ts";
import { native } from "../../ts/core/ffi/library.ts";
import { fixturePath, peer } from "./fixtures.ts";
import { expectSettled } from "./settled.ts";
import { fromBaseline } from "./leaks.ts";

const { ptr, i32, i64, u64, void: none, cstring } = FFIType;

export const owners = fromBaseline("owners_peer", openLibrary(fixturePath("owners_peer"), {
  owners_root_releases: { args: [], returns: i64 },
  owners_roots_live: { args: [], returns: i64 },
  owners_reset: { args: [], returns: none },
  owners_make_batch: { args: [i64, ptr, ptr], returns: none },
  owners_make_list_view: { args: [ptr, ptr], returns: none },
  owners_make_ree: { args: [ptr, ptr], returns: none },
  owners_make_device: { args: [i32, ptr, ptr], returns: none },
  owners_device_region_start: { args: [], returns: u64 },
  owners_device_region_end: { args: [], returns: u64 },
  owners_take: { args: [ptr, ptr], returns: ptr },
  owners_held_schema: { args: [ptr], returns: ptr },
  owners_held_array: { args: [ptr], returns: ptr },
  owners_release_held: { args: [ptr], returns: none },
  owners_release_held_on_thread: { args: [ptr], returns: none },
  owners_keep_only_child: { args: [ptr, i32], returns: ptr },
  owners_keep_only_dictionary: { args: [ptr], returns: ptr },
  owners_signature: { args: [ptr, ptr, ptr, i32], returns: i32 },
  owners_device_fields: { args: [ptr, ptr], returns: none },
  owners_render: { args: [ptr, ptr, ptr, i32], returns: none },
  owners_header_constants_json: { args: [], returns: cstring },
  owners_stress: { args: [cstring, i32, i32, i32, i32, i32, ptr], returns: i32 },
}).symbols, {
  live: ["owners_roots_live"],
  events: ["owners_root_releases"],
  resets: { owners_reset: ["owners_root_releases"] },
});

/** The producers' roots this test left live (0: none). */
export function ownersRootsLeft(): number {
  return Number(owners.owners_roots_live());
}

/** Native memory for a producer's ArrowSchema + ArrowDeviceArray (whose
 * first member is its ArrowArray), at a stable address. */
/** After each owner test: collects first (a release a late GC runs
 * belongs to the test that made it), then checks that nothing is left
 * live but what an import only views hold may hold (its producer's root:
 * test/helpers/settled.ts), and resets the peers' counts. */
export async function expectOwnersSettled(): Promise<void> {
  try {
    await expectSettled({}, { heldByImports: { ownersRoots: () => owners.owners_roots_live() } });
  } finally {
    peer.peer_reset_counts();
    owners.owners_reset();
  }
}

export class ProducerSlot implements Disposable {
  readonly address: number;
  constructor() {
    this.address = native.abd_alloc_zeroed(ArrowSchemaLayout.size + 128) as number;
  }
  get schema(): StructPointer<"ArrowSchema"> { return structPointer("ArrowSchema", this.address); }
  get array(): StructPointer<"ArrowDeviceArray"> { return structPointer("ArrowDeviceArray", this.address + ArrowSchemaLayout.size); }
  [Symbol.dispose](): void {
    // Whatever was not moved out is released, then the slot is freed.
    native.abd_device_array_release(this.array);
    native.abd_schema_release(this.schema);
    native.abd_free(this.address as Pointer);
  }
}

/** The consumer-side description of a tree (owners_signature). */
export function signature(schema: Pointer | number, array: Pointer | number): number[] {
  const out = new Float64Array(4096);
  const n = owners.owners_signature(schema as Pointer, array as Pointer, out, out.length);
  if (n < 0) throw new Error("signature buffer too small");
  return Array.from(out.subarray(0, n));
}

/** The signature of what a held box (owners_take) holds. */
export function heldSignature(held: Pointer): number[] {
  return signature(owners.owners_held_schema(held)!, owners.owners_held_array(held)!);
}

/** Every row of a held host array as text, rendered by the C consumer. */
export function render(held: Pointer): string {
  const out = new Uint8Array(8192);
  owners.owners_render(owners.owners_held_schema(held)!, owners.owners_held_array(held)!, out, out.length);
  return new TextDecoder().decode(out.subarray(0, out.indexOf(0)));
}

/** device_type, device_id, sync_event, reserved all zero. */
export function deviceFields(held: Pointer): { deviceType: number; deviceId: number; syncEvent: number; reservedZero: boolean } {
  const out = new Float64Array(4);
  owners.owners_device_fields(held, out);
  return { deviceType: out[0], deviceId: out[1], syncEvent: out[2], reservedZero: out[3] === 1 };
}
