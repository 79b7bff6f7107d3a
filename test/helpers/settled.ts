/**
 * The check a test file runs after each test: nothing the test made is
 * still live. It collects (a bounded number of rounds) until every library
 * counter is back at the test's baseline and every count in `others` is
 * zero, then fails naming what is left.
 *
 * One leftover is not a leak: an import whose memory only apache-arrow
 * views hold, with nothing else left but what that import holds when it
 * imported this library's own export (leaks.ts, onlyViewHeldImports). JSC
 * scans the stack conservatively, so a batch a test dropped can stay
 * marked by a stale word under the test runner's frame for any number of
 * collections; its views end, and its owner with them, once that word is
 * overwritten, during the next test (whose baseline counts them, and
 * whose check their release does not fail). After `viewHeldRounds`
 * rounds in that state the wait ends: more collections do not help.
 * An owner no view holds, an export no import can hold, a stream, a
 * handle or any count of `others` left over always fails. What such
 * imports were let keep comes back (empty when nothing was left), for
 * checks of what they hold outside the library (`expectFakesSettled`).
 */
import { expect } from "bun:test";
import { collectUntil } from "./gc.ts";
import { nonZeroCounters, onlyViewHeldImports } from "./leaks.ts";
import type { Counters } from "../../ts/diagnostics.ts";

/** Counts outside the library's own (a peer's live structs, stream
 * sources, wakes) that must be zero once a test is over, by name. */
export type OtherCounts = Record<string, () => number | bigint>;

const viewHeldRounds = 30;

function othersLeft(others: OtherCounts): Record<string, number | bigint> {
  const left: Record<string, number | bigint> = {};
  for (const [name, read] of Object.entries(others)) {
    const value = read();
    if (value !== 0 && value !== 0n) left[name] = value;
  }
  return left;
}

/** Options of `expectSettled` beyond the counts that must reach zero. */
export type SettleOptions = {
  /** Collections to wait at most (default 200). */
  rounds?: number;
  /** What else the wait waits for, given the counters left (empty, or
   * what view-held imports hold), e.g. a peer's release callbacks that run
   * on another thread after the counters they end; the caller checks it
   * itself afterwards. */
  ready?: (left: Partial<Counters>) => boolean;
  /** A peer's counts of what it produced that an import may hold (its
   * batches): zero, but at most one each per import left to its views. */
  heldByImports?: OtherCounts;
};

export async function expectSettled(others: OtherCounts = {}, options: SettleOptions = {}): Promise<Partial<Counters>> {
  const { rounds = 200, ready = () => true, heldByImports = {} } = options;
  /** What the imports left to views are let hold, or null (too much). */
  const heldLeft = (left: Partial<Counters>) => {
    const held = othersLeft(heldByImports);
    const owners = onlyViewHeldImports(left) ? left.live_owners ?? 0 : 0;
    return Object.values(held).every((count) => Number(count) <= owners) ? held : null;
  };
  let heldByViews = 0;
  const settled = () => {
    const left = nonZeroCounters();
    if (Object.keys(othersLeft(others)).length > 0) return false;
    if (Object.keys(left).length === 0) return Object.keys(othersLeft(heldByImports)).length === 0 && ready(left);
    heldByViews = onlyViewHeldImports(left) && heldLeft(left) !== null && ready(left) ? heldByViews + 1 : 0;
    return heldByViews >= viewHeldRounds;
  };
  await collectUntil(settled, rounds);
  const counters = nonZeroCounters();
  const left = { ...counters, ...othersLeft(others) };
  const viewHeld = Object.keys(left).length === 0 || onlyViewHeldImports(left);
  expect(viewHeld && heldLeft(counters) !== null ? {} : { ...left, ...othersLeft(heldByImports) }).toEqual({});
  return left as Partial<Counters>;
}
