/**
 * Loads the C fixtures that build.zig compiles into build/fixtures/.
 */
import { FFIType, suffix } from "bun:ffi";
import { join, resolve } from "node:path";
import { openLibrary } from "../../ts/core/ffi/bun_ffi.ts";
import { fromBaseline } from "./leaks.ts";

const { ptr, i32, i64, u32, u64, f64, void: none, cstring } = FFIType;

export const fixturesDir = resolve(import.meta.dir, "..", "..", "build", "fixtures");

export function fixturePath(name: string): string {
  return join(fixturesDir, `lib${name}.${suffix}`);
}

/** The text of a C string a fixture returned (a `cstring` return); NULL
 * is a fixture bug. */
export function fixtureText(text: string | null, from: string): string {
  if (text === null) throw new Error(`${from} returned NULL`);
  return String(text);
}

/** test/fixtures/c_peer.c: counted producer, release interceptor, holder. */
export const peer = fromBaseline("c_peer", openLibrary(fixturePath("c_peer"), {
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
  peer_echo_pointer: { args: [ptr], returns: ptr },
  peer_echo_string: { args: [ptr], returns: cstring },
  peer_counting_deallocator: { args: [], returns: ptr },
  peer_deallocations: { args: [], returns: i64 },
  peer_last_deallocated_bytes: { args: [], returns: ptr },
  peer_last_deallocated_context: { args: [], returns: ptr },
}).symbols, {
  live: ["peer_produced_live"],
  events: ["peer_intercepted_array_releases", "peer_intercepted_schema_releases"],
  resets: { peer_reset_counts: ["peer_intercepted_array_releases", "peer_intercepted_schema_releases"] },
});

/** test/fixtures/layout_probe.c: the header's layout, as C sees it. */
export const probe = openLibrary(fixturePath("layout_probe"), {
  probe_layout_json: { args: [], returns: cstring },
  probe_device_types_json: { args: [], returns: cstring },
}).symbols;

/** test/fixtures/c_producer.c: arbitrary (also broken) C-produced trees
 * with counted releases. */
export const fx = fromBaseline("c_producer", openLibrary(fixturePath("c_producer"), {
  fx_new: { args: [ptr, ptr, i64, i64, i64, i64, i64], returns: ptr },
  fx_set_buffer: { args: [ptr, i32, ptr, i64], returns: none },
  fx_set_buffer_address: { args: [ptr, i32, u64], returns: none },
  fx_buffer_address: { args: [ptr, i32], returns: ptr },
  fx_set_metadata: { args: [ptr, ptr, i64], returns: none },
  fx_add_child: { args: [ptr, ptr], returns: none },
  fx_set_dictionary: { args: [ptr, ptr], returns: none },
  fx_patch: { args: [ptr, i32, i64], returns: none },
  fx_finish: { args: [ptr, ptr, ptr], returns: none },
  fx_finish_device: { args: [ptr, ptr, ptr, i32, i64], returns: none },
  fx_nested_lists: { args: [i32], returns: ptr },
  fx_live_nodes: { args: [], returns: i64 },
  fx_schema_releases: { args: [], returns: i64 },
  fx_array_releases: { args: [], returns: i64 },
  fx_double_releases: { args: [], returns: i64 },
  fx_reset_counts: { args: [], returns: none },
  fx_reserve: { args: [i64], returns: ptr },
  fx_unreserve: { args: [ptr, i64], returns: none },
  fx_set_guarded: { args: [i32], returns: none },
  fx_guarded_mappings: { args: [], returns: i64 },
}).symbols, {
  live: ["fx_live_nodes"],
  events: ["fx_schema_releases", "fx_array_releases", "fx_double_releases"],
  resets: { fx_reset_counts: ["fx_schema_releases", "fx_array_releases", "fx_double_releases"] },
});

/** fx_patch codes (c_producer.c). */
export const FxPatch = {
  ARRAY_N_CHILDREN: 1, ARRAY_CHILDREN_NULL: 2, SCHEMA_FORMAT_NULL: 3, ARRAY_BUFFERS_NULL: 4,
  ARRAY_RELEASED: 5, SCHEMA_RELEASED: 6, ARRAY_DICTIONARY_NULL: 7,
} as const;

/** test/fixtures/stream_peer.c: C stream producers and a threaded consumer. */
export const streamPeer = fromBaseline("stream_peer", openLibrary(fixturePath("stream_peer"), {
  sp_stream_releases: { args: [], returns: i64 },
  sp_array_releases: { args: [], returns: i64 },
  sp_produced_live: { args: [], returns: i64 },
  sp_producer_streams_live: { args: [], returns: i64 },
  sp_reset_counts: { args: [], returns: none },
  sp_intercept_stream: { args: [i32, ptr], returns: none },
  sp_intercept_stream_arrays: { args: [ptr], returns: none },
  sp_handed_arrays: { args: [], returns: i64 },
  sp_handed_array_releases: { args: [], returns: i64 },
  sp_intercept_stream_batches: { args: [i32, ptr], returns: none },
  sp_int_stream: { args: [i32, i64, i64, i64, cstring, i32, i32, ptr], returns: none },
  sp_ree_stream: { args: [i64, ptr], returns: none },
  sp_list_new: { args: [ptr], returns: ptr },
  sp_list_push: { args: [ptr, ptr], returns: none },
  sp_list_finish: { args: [ptr, i32, ptr], returns: none },
  sp_consume: { args: [i32, ptr, i32, i32, i64], returns: ptr },
  sp_job_done: { args: [ptr], returns: i32 },
  sp_job_schema_rc: { args: [ptr], returns: i32 },
  sp_job_schema_format: { args: [ptr], returns: cstring },
  sp_job_schema_children: { args: [ptr], returns: i64 },
  sp_job_batches: { args: [ptr], returns: i64 },
  sp_job_rows: { args: [ptr], returns: i64 },
  sp_job_error: { args: [ptr], returns: i32 },
  sp_job_repeat_error: { args: [ptr], returns: i32 },
  sp_job_repeat_same_message: { args: [ptr], returns: i32 },
  sp_job_ended_twice: { args: [ptr], returns: i32 },
  sp_job_message: { args: [ptr], returns: cstring },
  sp_job_last_value: { args: [ptr], returns: i64 },
  sp_job_device_ids_seen: { args: [ptr], returns: i64 },
  sp_job_device_type_mismatches: { args: [ptr], returns: i32 },
  sp_job_sync_events: { args: [ptr], returns: i64 },
  sp_job_take: { args: [ptr, i64, ptr, ptr], returns: i32 },
  sp_job_free: { args: [ptr], returns: none },
  sp_drain: { args: [i32, ptr], returns: i64 },
  sp_set_delay_us: { args: [i32], returns: none },
  sp_repeat_new: { args: [i64, i64], returns: ptr },
  sp_repeat_fill: { args: [ptr, ptr, ptr], returns: none },
  sp_repeat_live_batches: { args: [ptr], returns: i64 },
  sp_repeat_free: { args: [ptr], returns: none },
  sp_repeat_stream: { args: [ptr, ptr], returns: none },
}).symbols, {
  live: ["sp_produced_live", "sp_producer_streams_live"],
  events: ["sp_stream_releases", "sp_array_releases", "sp_handed_arrays", "sp_handed_array_releases"],
  resets: { sp_reset_counts: ["sp_stream_releases", "sp_array_releases", "sp_handed_arrays", "sp_handed_array_releases"] },
});

/** sp_consume flags. */
export const SP_HOLD = 1;
export const SP_CHECK_ERROR_TWICE = 2;
