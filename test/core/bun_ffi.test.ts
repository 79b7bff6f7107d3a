/**
 * What ts/core/ffi/bun_ffi.ts claims about the pinned Bun, where bun-types says
 * otherwise: checked at run time, so that a Bun upgrade that changes one of
 * them fails here rather than somewhere downstream.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { FFIType, read, toArrayBuffer, type Pointer } from "bun:ffi";
import { native } from "../../ts/core/ffi/library.ts";
import { peer } from "../helpers/fixtures.ts";
import { collectUntil } from "../helpers/gc.ts";
import { expectSettled } from "../helpers/settled.ts";

afterEach(async () => {
  await expectSettled();
});

function allocate(bytes: number): Pointer {
  const address = native.abd_alloc_zeroed(bytes);
  if (address === null) throw new Error(`could not allocate ${bytes} bytes`);
  return address;
}

function deallocations(): number {
  return Number(peer.peer_deallocations());
}

describe("bun:ffi as ts/core/ffi/bun_ffi.ts declares it", () => {
  test("FFIType.usize exists at run time and is uint64_t", () => {
    expect(FFIType.usize).toBe(FFIType.u64);
    expect(FFIType.usize).toBe(8);
  });

  test("a ptr return is a number, or null for NULL (never a BigInt)", () => {
    const memory = allocate(16);
    try {
      const echoed = peer.peer_echo_pointer(memory);
      expect(typeof echoed).toBe("number");
      expect(echoed).toBe(memory);
      expect(peer.peer_echo_pointer(null)).toBeNull();
      expect(typeof native.abd_view_deallocator()).toBe("number");
    } finally {
      native.abd_free(memory);
    }
  });

  test("a cstring return is a string, or null for NULL", () => {
    const text = Buffer.from("arrow\0");
    const echoed = peer.peer_echo_string(text);
    expect(typeof echoed).toBe("string");
    expect(echoed).toBe("arrow");
    expect(peer.peer_echo_string(null)).toBeNull();
  });

  test("toArrayBuffer(ptr, 0, n, context, deallocator) views the memory in place; detaching calls deallocator(bytes, context) once", () => {
    const memory = allocate(64);
    const context = allocate(8);
    const before = deallocations();
    const buffer = toArrayBuffer(memory, 0, 64, context, peer.peer_counting_deallocator()!);
    try {
      new Uint8Array(buffer)[5] = 42;
      expect(read.u8(memory, 5)).toBe(42); // the same bytes: no copy
      expect(deallocations()).toBe(before);
      buffer.transfer(0);
      expect(buffer.detached).toBe(true);
      expect(deallocations()).toBe(before + 1);
      expect(peer.peer_last_deallocated_bytes()).toBe(memory);
      expect(peer.peer_last_deallocated_context()).toBe(context);
    } finally {
      native.abd_free(memory);
      native.abd_free(context);
    }
  });

  test("toArrayBuffer's deallocator also runs, once, when the ArrayBuffer is collected", async () => {
    const memory = allocate(64);
    const context = allocate(8);
    const before = deallocations();
    (() => {
      const view = new Uint8Array(toArrayBuffer(memory, 0, 64, context, peer.peer_counting_deallocator()!));
      view[0] = 1;
    })();
    try {
      expect(await collectUntil(() => deallocations() > before)).toBe(true);
      expect(deallocations()).toBe(before + 1);
      expect(peer.peer_last_deallocated_context()).toBe(context);
    } finally {
      native.abd_free(memory);
      native.abd_free(context);
    }
  });
});
