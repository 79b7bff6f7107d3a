/**
 * Debug mode (ARROW_DEVICE_DEBUG=1): records where every live handle was
 * created, warns when a handle is garbage-collected without being disposed
 * (a leak the FinalizationRegistry safety net had to clean up), and reports
 * the handles still alive when the process exits.
 */

/** Whether debug mode is on (ARROW_DEVICE_DEBUG=1 when this module loaded). */
export const debugEnabled: boolean = process.env.ARROW_DEVICE_DEBUG === "1";

type Live = { kind: string; stack: string };
const live = new Map<number, Live>();
let nextToken = 1;

/** Records a new handle; returns a token for `untrack` (0 when disabled). */
export function track(kind: string): number {
  if (!debugEnabled) return 0;
  const token = nextToken++;
  const stack = (new Error().stack ?? "").split("\n").slice(3, 9).join("\n");
  live.set(token, { kind, stack });
  return token;
}

/** The site of every dispose outside debug mode: one shared Error that
 * records nothing (`disposalSite` names no line for it). */
const unrecordedSite = new Error("dispose site not recorded (ARROW_DEVICE_DEBUG=1 records it)");

/** " at <frame>": where `site` (a `disposeSite()` a handle's dispose()
 * made) says the handle was disposed, its first frame outside the
 * library's handle modules; outside debug mode, how to have it recorded;
 * "" for no site. */
export function disposalSite(site: Error | null): string {
  if (site === null) return "";
  if (site === unrecordedSite) return " (ARROW_DEVICE_DEBUG=1 records where)";
  const frames = (site.stack ?? "").split("\n").map((line) => line.trim()).filter((line) => line.startsWith("at "));
  const caller = frames.find((frame) => !/(imported_array|debug)\.(ts|js)/.test(frame));
  return caller === undefined ? "" : ` ${caller}`;
}

/** The frames a dispose site keeps: this module's, the handle's dispose()
 * (and its [Symbol.dispose] under `using`), and the caller's, with room
 * to spare. An Error's stack costs per frame captured (the default 10
 * cost each dispose ~200 ns more), and only the caller's is read. */
const siteFrames = 6;

/**
 * Where a handle's dispose() runs, for `disposalSite` to name later. In
 * debug mode, an Error of at most `siteFrames` frames
 * (Error.stackTraceLimit lowered around its construction, never raised,
 * and always restored); otherwise the one shared unrecorded site, as
 * creation sites are: capturing a stack is 11-15% of an import, construct
 * and dispose cycle.
 */
export function disposeSite(): Error {
  if (!debugEnabled) return unrecordedSite;
  const limit = Error.stackTraceLimit;
  if (!(typeof limit === "number" && limit > siteFrames)) return new Error("disposed here");
  try {
    Error.stackTraceLimit = siteFrames;
  } catch {
    return new Error("disposed here"); // a frozen Error: the usual stack
  }
  try {
    return new Error("disposed here");
  } finally {
    Error.stackTraceLimit = limit;
  }
}

export function untrack(token: number): void {
  if (token) live.delete(token);
}

/** Called by a safety-net finalizer: the handle was never disposed. */
export function reportLeak(token: number, kind: string): void {
  if (!debugEnabled) return;
  const where = live.get(token)?.stack ?? "(creation site not recorded)";
  live.delete(token);
  console.warn(`[bun-arrow-device] ${kind} was garbage-collected without dispose(); created at:\n${where}`);
}

// Handles that hold native memory only through ArrayBuffers (ImportedArray)
// need no finalizer of their own; in debug mode one tells us when such a
// handle was collected without dispose(), so that it is reported then and
// not counted as alive at exit.
const collected = debugEnabled
  ? new FinalizationRegistry<{ token: number; kind: string }>(({ token, kind }) => reportLeak(token, kind))
  : null;

/** Debug mode: report `handle` (tracked as `token`) if it is collected
 * without `unwatch`. A no-op otherwise. */
export function watch(handle: object, token: number, kind: string): void {
  if (collected && token) collected.register(handle, { token, kind }, handle);
}

export function unwatch(handle: object): void {
  collected?.unregister(handle);
}

/** Handles created but not yet disposed (debug mode only). */
export function liveHandles(): { kind: string; stack: string }[] {
  return [...live.values()];
}

if (debugEnabled) {
  process.on("exit", () => {
    if (live.size === 0) return;
    console.warn(`[bun-arrow-device] ${live.size} handle(s) still alive at exit:`);
    for (const { kind, stack } of live.values()) console.warn(`- ${kind}, created at:\n${stack}`);
  });
}
