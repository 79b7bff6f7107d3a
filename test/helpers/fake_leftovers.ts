/**
 * What the device test files' after-each check lets the fake drivers
 * still hold once `expectSettled` let imports that only their views hold
 * pass (test/helpers/settled.ts): no side effects, so any test can
 * import it (test/helpers/device.ts points the runtimes at the fakes).
 */
import type { Counters } from "../../ts/diagnostics.ts";

/**
 * The fakes' counts (`leaks`: per kind, `fakeLeaks`, each counted from
 * the test's baseline) beyond what `left` allows, as "kind.count"
 * entries. `left` is `expectSettled`'s result: the counters of the imports
 * it let their views keep (a stale stack word holds their batch). With
 * none, the fakes hold nothing. With some, they may hold those batches:
 * a host-visible batch a fake produced holds its producer's pinned or
 * managed memory, events and streams, any number; device memory only as
 * the library's own (at most `live_device_allocations`). Anything else,
 * or more, is a leak.
 */
export function fakeLeftovers(leaks: Record<string, Record<string, number>>, left: Partial<Counters>): Record<string, number> {
  const viewHeld = (left.live_owners ?? 0) > 0;
  let device = left.live_device_allocations ?? 0;
  const producers = new Set(["pinned", "managed", "events", "streams", "produced", "producedStreams"]);
  const over: Record<string, number> = {};
  for (const [kind, counts] of Object.entries(leaks)) {
    for (const [name, count] of Object.entries(counts ?? {})) {
      let allowed = 0;
      if (viewHeld && producers.has(name)) allowed = count;
      else if (name === "device") allowed = Math.min(count, device);
      device -= name === "device" ? allowed : 0;
      if (count > allowed) over[`${kind}.${name}`] = count - allowed;
    }
  }
  return over;
}
