/**
 * Bun-only reproduction: what an ArrayBuffer over native memory costs the
 * garbage collector, whoever makes it. No library code is involved: plain
 * `toArrayBuffer(ptr, 0, bytes, context, deallocator)` over one malloc'd
 * region (the deallocator is libc's `sched_yield`, a harmless no-op).
 *
 *   bun run bench -- --section external-memory-gc [--quick]
 *
 * Part 1 counts JSC's collections per 1000 cycles (it re-runs itself with
 * BUN_JSC_logGC=1 and counts the "START" lines between markers) for a
 * cycle that wraps `bytes` of native memory:
 *   one      one ArrayBuffer of `bytes`, ten typed-array views into it
 *   ten      ten ArrayBuffers of `bytes / 10`, one view each
 *   one-bare one ArrayBuffer of `bytes`, no view
 * Findings on Bun 1.4.5: collections grow with `bytes` (each ArrayBuffer's
 * length is reported to the GC as newly allocated memory when it is made,
 * JSC's Heap::addReference -> didAllocate: "oversized bytes" in the log),
 * so "GC count flat in rows" is not reachable for any zero-copy import:
 * every row's bytes are reported once per import. Typed-array views of an
 * ArrayBuffer add nothing; one ArrayBuffer over a region collects less
 * often than ten over the same bytes.
 *
 * Part 2 shows why an import cannot share one deallocator among several
 * ArrayBuffers by linking them in JS (each ArrayBuffer made without a
 * deallocator, holding a reference to one anchor that has it). Garbage
 * collection alone would respect the link: a typed array keeps its
 * ArrayBuffer object alive, and so what that object references. But
 * `buffer.transfer()` (or structuredClone with transfer) moves the memory
 * into a new ArrayBuffer that has no link, while the old one is detached:
 * the anchor can then be collected, and its release would free memory the
 * new ArrayBuffer still reads. A deallocator moves with the memory, so
 * only a deallocator per ArrayBuffer is safe.
 */
import { dlopen, FFIType, ptr, toArrayBuffer, type Pointer } from "bun:ffi";

const quick = process.argv.includes("--quick");
const child = process.env.REPRO_CHILD === "1";
const cycles = 1000;
const sizes = quick ? [80_000, 8_000_000] : [80_000, 8_000_000, 80_000_000];

const libc = dlopen(process.platform === "darwin" ? "libc.dylib" : "libc.so.6", {
  malloc: { args: [FFIType.u64], returns: FFIType.ptr },
  sched_yield: { args: [], returns: FFIType.i32 },
});
// bun:ffi gives each symbol its address as `.ptr` (not in its types).
const noop = (libc.symbols.sched_yield as unknown as { ptr: Pointer }).ptr;
const context = 8 as unknown as Pointer; // never dereferenced

type Variant = (address: number, bytes: number) => unknown;
const variants: Record<string, Variant> = {
  one: (address, bytes) => {
    const memory = toArrayBuffer(address as unknown as Pointer, 0, bytes, context, noop);
    return Array.from({ length: 10 }, (_, i) => new Float64Array(memory, i * (bytes / 10), bytes / 80));
  },
  ten: (address, bytes) => Array.from({ length: 10 }, (_, i) =>
    new Float64Array(toArrayBuffer((address + i * (bytes / 10)) as unknown as Pointer, 0, bytes / 10, context, noop))),
  "one-bare": (address, bytes) => toArrayBuffer(address as unknown as Pointer, 0, bytes, context, noop),
};

function part1Child(): void {
  for (const bytes of sizes) {
    const address = Number(libc.symbols.malloc(bytes));
    for (const [name, make] of Object.entries(variants)) {
      let keep: unknown;
      for (let i = 0; i < 50; i++) keep = make(address, bytes);
      Bun.gc(true);
      console.error(`MARK ${name} ${bytes}`);
      const t0 = Bun.nanoseconds();
      for (let i = 0; i < cycles; i++) keep = make(address, bytes);
      const us = (Bun.nanoseconds() - t0) / cycles / 1000;
      console.error("ENDMARK");
      console.log(`TIME ${name} ${bytes} ${us.toFixed(2)}`);
      void keep;
      Bun.gc(true);
    }
  }
}

function part1(): void {
  const run = Bun.spawnSync([process.execPath, import.meta.path, ...process.argv.slice(2)], {
    env: { ...process.env, REPRO_CHILD: "1", BUN_JSC_logGC: "1" },
  });
  const times = new Map<string, string>();
  for (const line of run.stdout.toString().split("\n")) {
    const [tag, name, bytes, us] = line.split(" ");
    if (tag === "TIME") times.set(`${name} ${bytes}`, us);
  }
  console.log(`Part 1: collections per ${cycles} cycles (Bun ${Bun.version})`);
  console.log("bytes per cycle   variant    GCs   µs/cycle (GC included)");
  let current: string | null = null;
  let count = 0;
  for (const line of run.stderr.toString().split("\n")) {
    if (line.startsWith("MARK ")) { current = line.slice(5); count = 0; }
    else if (line === "ENDMARK" && current) {
      const [name, bytes] = current.split(" ");
      console.log(`${bytes.padStart(15)}   ${name.padEnd(9)} ${String(count).padStart(4)}   ${times.get(current) ?? "?"}`);
      current = null;
    } else if (current && line.includes(": START ")) count++;
  }
}

/** One ArrayBuffer over `memory` linking `anchor` (a property and a
 * WeakMap entry); returns only a typed array over it, or with `transfer`
 * only the ArrayBuffer that `transfer()` moved its memory to. */
function linked(memory: Uint8Array, anchor: object, links: WeakMap<ArrayBuffer, object>, transfer: boolean): Int32Array | ArrayBuffer {
  const buffer = toArrayBuffer(ptr(memory), 0, memory.byteLength);
  links.set(buffer, anchor);
  (buffer as unknown as { anchor: object }).anchor = anchor;
  return transfer ? buffer.transfer() : new Int32Array(buffer, 16, 100);
}

async function part2(): Promise<void> {
  const memory = new Uint8Array(1 << 20);
  console.log("\nPart 2: 100 ArrayBuffers over native memory, each linking an object (property + WeakMap)");
  for (const transfer of [false, true]) {
    let collected = 0;
    const registry = new FinalizationRegistry(() => { collected++; });
    const kept: (Int32Array | ArrayBuffer)[] = [];
    const links = new WeakMap<ArrayBuffer, object>();
    for (let i = 0; i < 100; i++) {
      const anchor = {};
      registry.register(anchor, i);
      kept.push(linked(memory, anchor, links, transfer));
    }
    for (let i = 0; i < 20; i++) { Bun.gc(true); await Bun.sleep(1); }
    const same = kept.every((k) => ptr(k instanceof ArrayBuffer ? new Uint8Array(k) : k) - (k instanceof ArrayBuffer ? 0 : 16) === ptr(memory));
    console.log(`  ${transfer ? "only buffer.transfer()'s result kept" : "only a typed-array view kept   "}: linked objects collected ${collected} of 100; what is kept still points at the memory: ${same}`);
  }
  console.log("  (a view keeps its ArrayBuffer object alive, but transfer() moves the memory, deallocator included, to a new\n   ArrayBuffer without the link: only a deallocator per ArrayBuffer follows the memory wherever JS moves it)");
}

if (child) {
  part1Child();
} else {
  part1();
  await part2();
}
