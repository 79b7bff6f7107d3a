/**
 * Loads the C fixtures that build.zig compiles into build/fixtures/.
 */
import { dlopen, FFIType, suffix } from "bun:ffi";
import { join, resolve } from "node:path";

const { ptr, i32, i64, u32, f64, void: none, cstring } = FFIType;

export const fixturesDir = resolve(import.meta.dir, "..", "..", "build", "fixtures");

export function fixturePath(name: string): string {
  return join(fixturesDir, `lib${name}.${suffix}`);
}

/** test/fixtures/c_peer.c: counted producer, release interceptor, holder. */
export const peer = dlopen(fixturePath("c_peer"), {
  peer_intercept_array: { args: [ptr], returns: none },
  peer_intercept_schema: { args: [ptr], returns: none },
  peer_intercepted_array_releases: { args: [], returns: i64 },
  peer_intercepted_schema_releases: { args: [], returns: i64 },
  peer_reset_counts: { args: [], returns: none },
  peer_make_int32: { args: [i64, i64, i32, ptr, ptr], returns: none },
  peer_produced_live: { args: [], returns: i64 },
  peer_take: { args: [ptr, ptr], returns: ptr },
  peer_buffer_address: { args: [ptr, i32, i32], returns: ptr },
  peer_checksum_primitive: { args: [ptr, i32, i32], returns: u32 },
  peer_sum_primitive: { args: [ptr, i32], returns: f64 },
  peer_release_held: { args: [ptr], returns: none },
  peer_release_held_on_thread: { args: [ptr], returns: none },
  peer_release_held_later: { args: [ptr, i32], returns: i32 },
  peer_wait_background: { args: [], returns: none },
}).symbols;

/** test/fixtures/layout_probe.c: the header's layout, as C sees it. */
export const probe = dlopen(fixturePath("layout_probe"), {
  probe_layout_json: { args: [], returns: cstring },
  probe_device_types_json: { args: [], returns: cstring },
}).symbols;
