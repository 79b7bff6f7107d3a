/**
 * The JS-side live counts that stream and async tests check, counted from
 * the per-test baseline (test/helpers/leaks.ts): what the running test
 * left, not what the process holds.
 */
import { liveStreamSources as processStreamSources } from "../../ts/arrow/stream_export.ts";
import { registeredWakes as processWakes } from "../../ts/native/js_wake.ts";
import { leakedSince, trackLive } from "./leaks.ts";

const read = () => ({ streamSources: processStreamSources(), wakes: processWakes() });
trackLive("js", read);

/** Stream sources this test exported and did not release. */
export function liveStreamSources(): number {
  return leakedSince("js", read()).streamSources ?? 0;
}

/** Wake-up handlers this test registered and did not remove. */
export function registeredWakes(): number {
  return leakedSince("js", read()).wakes ?? 0;
}
