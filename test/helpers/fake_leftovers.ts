/**
 * What the device test files' after-each check lets the fake drivers
 * still hold once `expectSettled` let imports that only their views hold
 * pass (test/helpers/settled.ts): no side effects, so any test can
 * import it (test/helpers/device.ts points the runtimes at the fakes).
 */
import type { Counters } from "../../ts/diagnostics.ts";

/**
 * The fakes' counts (`leaks`: per kind, `fakeLeaks`) beyond what `left`
 * allows, as "kind.count" entries. `left` is `expectSettled`'s result:
 * the counters of the imports it let their views keep (a stale stack
 * word holds their batch). They hold what it let them hold and nothing
 * more: memory of the library's own making (at most
 * `live_device_allocations` allocations, device, pinned or managed, and
 * `live_device_events` events), and per owner one batch a fake produced.
 * Anything else, or more, is a leak.
 */
export function fakeLeftovers(leaks: Record<string, Record<string, number>>, left: Partial<Counters>): Record<string, number> {
  const allowance = { allocations: left.live_device_allocations ?? 0, events: left.live_device_events ?? 0, produced: left.live_owners ?? 0 };
  const pool: Record<string, keyof typeof allowance> = { device: "allocations", pinned: "allocations", managed: "allocations", events: "events", produced: "produced" };
  const over: Record<string, number> = {};
  for (const [kind, counts] of Object.entries(leaks)) {
    for (const [name, count] of Object.entries(counts ?? {})) {
      const key = pool[name];
      const allowed = key === undefined ? 0 : Math.min(count, allowance[key]);
      if (key !== undefined) allowance[key] -= allowed;
      if (count > allowed) over[`${kind}.${name}`] = count - allowed;
    }
  }
  return over;
}
