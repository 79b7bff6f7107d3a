/**
 * Explicit lifetimes for C structs a user holds: `ArrowSchema`, `ArrowArray`
 * and `ArrowDeviceArray` that some C library handed over (or that this
 * library allocated as a landing place), read in place, moved, released.
 *
 * Ownership.
 * - `X.allocate()` makes a zeroed (released) struct in native memory that
 *   the object owns; `dispose()` releases what it holds, then frees it.
 * - `X.at(address)` is a borrowed view of the caller's struct: the object
 *   never frees the memory; `release()` calls the struct's release.
 * - `move(dest?)` is the spec's move: a bitwise copy into `dest` (a new
 *   owned struct when omitted) and `release = NULL` on the source, done
 *   natively (zig/import/move.zig). The source object stays usable as a released
 *   struct.
 * - `moveChild(i, dest?)` moves one child out of a live parent; the parent
 *   must be released next (`release()`), and its release skips the moved
 *   children, as CDataInterface.rst describes. Children read through
 *   `child(i)` are borrowed views, valid while their base struct is alive;
 *   only a base struct may be released.
 *
 * A FinalizationRegistry is only a safety net: an owned struct dropped
 * without `dispose()` is released and freed when it is collected, with a
 * warning in debug mode (ARROW_DEVICE_DEBUG=1). Call `dispose()` (or
 * `using`).
 *
 * Threads: these objects are used from the JS thread; the release
 * callbacks they call run there. Structs moved to C may be released by C on
 * any thread.
 */
import type { Pointer } from "bun:ffi";
import { ArrowArrayLayout, ArrowDeviceArrayLayout, ArrowSchemaLayout, deviceTypeName } from "../core/abi/layout.ts";
import { arrayFields, asPointer, deviceArrayFields, readMetadata, schemaFields } from "../core/abi/structs.ts";
import { probeError, probeImportPair, probePairPasses, probeStruct, type ProbeDepth } from "../core/abi/probe.ts";
import { branded, type StructName, type StructPointer } from "../core/abi/pointers.ts";
import { isLiveExportPair } from "./live_export.ts";
import { addressArg, argumentError, integerArg, internalConstruction } from "../core/args.ts";

/** Only this module constructs the struct classes. */
const structToken = Symbol("CStruct");
import { InvalidArgumentError, OutOfMemoryError, OutOfRangeError, ReleasedError, Status } from "../core/errors.ts";
import { check, native } from "../core/ffi/library.ts";
import { reportLeak, track, untrack } from "./debug.ts";
import { inspectCustom } from "./inspect.ts";
import { showCStruct } from "./inspect_structs.ts";

/** A C `struct K` named by its typed address (`structPointer`), or by an
 * object with one (the classes below, for the kinds they cover). */
export type StructRef<K extends StructName> = StructPointer<K> | { readonly address: StructPointer<K> };

/** The address `ref` names (0 for null/undefined). Throws
 * InvalidArgumentError for anything that is not a StructRef. */
export function addressOf(ref: StructRef<StructName> | null | undefined): number {
  return structAddress("addressOf", "ref", ref, null, true);
}

/** The address of the C struct `ref` names, checked for `fn`'s `param`:
 * a CSchema/CArray/CDeviceArray (of `kind` when given), an object with an
 * `address`, or an address; null/undefined give 0 when `nullable`. */
export function structAddress(fn: string, param: string, ref: unknown, kind: CStructKind | null, nullable: boolean): number {
  if (ref instanceof CStruct) {
    if (kind && ref.kind !== kind) throw argumentError(fn, param, `an ${kind} (or its address)`, ref);
    return Number(ref.address);
  }
  if (typeof ref === "object" && ref !== null && "address" in ref) return addressArg(fn, `${param}.address`, ref.address, false);
  // The message is built only for a refusal: an address, the usual
  // argument, allocates nothing here.
  if (!nullable && (ref === null || ref === undefined)) throw argumentError(fn, param, expectedStruct(kind), ref);
  if (typeof ref !== "number" && typeof ref !== "bigint" && ref !== null && ref !== undefined) throw argumentError(fn, param, expectedStruct(kind), ref);
  return addressArg(fn, param, ref, nullable);
}

function expectedStruct(kind: CStructKind | null): string {
  return kind ? `an ${kind} address or C struct` : "a C struct address";
}

/**
 * The checked addresses of C structs a call takes ownership of (an import,
 * a relay, a device copy), with the call's other checks (`checkRest`).
 * Such a call owns what it is given even when it fails: when any argument
 * is bad, the good structs are released here and the first error thrown.
 * NULL is allowed (0; the native side reports it, after moving the other
 * struct in). `depth`: how deep the address probe looks at a schema and
 * array pair (docs/validation.md); single structs get the whole probe.
 */
export function takeStructs(fn: string, refs: [param: string, ref: unknown, kind: CStructKind][], checkRest: () => void = () => {}, depth: ProbeDepth = "roots"): number[] {
  let error: unknown = null;
  const pair = pairProbed(fn, refs, depth);
  if (pair !== null && pair.error !== null) error = pair.error;
  const addresses = pair?.addresses ?? refs.map(([param, ref, kind]) => {
    try {
      const address = structAddress(fn, param, ref, kind, true);
      // A refused struct is released by the probe when that is safe,
      // else left untouched (it may not be a struct at all).
      if (address) probeStruct(fn, param, kind, address, "owned");
      return address;
    } catch (caught) {
      error ??= caught;
      return 0;
    }
  });
  if (!error) {
    try {
      checkRest();
    } catch (caught) {
      error = caught;
    }
  }
  if (error) {
    const released: string[] = [];
    refs.forEach(([param, , kind], i) => {
      if (addresses[i]) {
        releaseAt(kind, addresses[i]);
        released.push(param);
      }
    });
    // Said in the error: a retry with the same structs cannot work.
    if (released.length > 0 && error instanceof Error) {
      error.message += `; the ${released.join(" and ")} given ${released.length > 1 ? "were" : "was"} released too (a failed import owns its structs: retry with new ones)`;
    }
    throw error;
  }
  return addresses;
}

/** Where `takePair` leaves the addresses it took (read at once by its
 * caller: no array per import). */
export const takenPair = { schema: 0, array: 0 };

/**
 * `takeStructs` of the usual [schema, array] pair on the way every good
 * import takes, allocating nothing: true when both name non-NULL structs
 * whose probe to `depth` passes (their addresses are then in
 * `takenPair`). False, having taken and released nothing, for anything
 * else: the caller then calls `takeStructs`, which says what is wrong and
 * releases what it must.
 */
export function takePair(schemaRef: unknown, arrayRef: unknown, arrayKind: "ArrowArray" | "ArrowDeviceArray", depth: ProbeDepth): boolean {
  let schema: number;
  let array: number;
  try {
    schema = structAddress("takePair", "schema", schemaRef, "ArrowSchema", false);
    array = structAddress("takePair", "array", arrayRef, arrayKind, false);
  } catch {
    return false;
  }
  const passes = isLiveExportPair(schema, array, arrayKind)
    ? probePairPasses(schema, arrayKind, array, true)
    : probeImportPair(schema, arrayKind, array, depth).result === "ok";
  if (!passes) return false;
  takenPair.schema = schema;
  takenPair.array = array;
  return true;
}

/** The usual [schema, array] pair, probed to `depth` in one native call
 * when both are good addresses: their addresses, with `error` set (and
 * the failed side's address 0: not safe to release) when a node below a
 * root failed. Null when they are not such a pair or a root failed: each
 * is then checked on its own, which names what failed. */
function pairProbed(fn: string, refs: [param: string, ref: unknown, kind: CStructKind][], depth: ProbeDepth): { addresses: number[]; error: Error | null } | null {
  if (refs.length !== 2) return null;
  const [[schemaParam, schemaRef, schemaKind], [arrayParam, arrayRef, arrayKind]] = refs;
  if (schemaKind !== "ArrowSchema" || arrayKind === "ArrowSchema") return null;
  let schema: number;
  let array: number;
  try {
    schema = structAddress(fn, schemaParam, schemaRef, schemaKind, true);
    array = structAddress(fn, arrayParam, arrayRef, arrayKind, true);
  } catch {
    return null;
  }
  // A live export slot of this library: read directly at every depth.
  if (isLiveExportPair(schema, array, arrayKind)) return probePairPasses(schema, arrayKind, array, true) ? { addresses: [schema, array], error: null } : null;
  const verdict = probeImportPair(schema, arrayKind, array, depth);
  if (verdict.result === "ok") return { addresses: [schema, array], error: null };
  if (verdict.result === "roots") return null;
  const error = probeError(fn, verdict.side === 0 ? schemaParam : arrayParam, verdict.status);
  return { addresses: verdict.side === 0 ? [0, array] : [schema, 0], error };
}

/** The checked address of a struct the caller views or fills in place
 * (`X.at`): readable and writable memory, released or of a sane shape. */
function viewAddress(fn: string, kind: CStructKind, address: unknown): number {
  const checked = addressArg(fn, "address", address);
  probeStruct(fn, "address", kind, checked, false);
  return checked;
}

/** Which C struct a CStruct is. */
export type CStructKind = "ArrowSchema" | "ArrowArray" | "ArrowDeviceArray";

type OwnedSlot = { address: number; kind: CStructKind; token: number };

const sizes: Record<CStructKind, number> = {
  ArrowSchema: ArrowSchemaLayout.size,
  ArrowArray: ArrowArrayLayout.size,
  ArrowDeviceArray: ArrowDeviceArrayLayout.size,
};

function releaseAt(kind: CStructKind, address: number): void {
  const p = asPointer(address);
  if (kind === "ArrowSchema") native.abd_schema_release(p);
  else if (kind === "ArrowArray") native.abd_array_release(p);
  else native.abd_device_array_release(p);
}

const safetyNet = new FinalizationRegistry<OwnedSlot>((slot) => {
  reportLeak(slot.token, `owned ${slot.kind}`);
  releaseAt(slot.kind, slot.address);
  native.abd_free(asPointer(slot.address));
});

/** The move of every struct class: `dest` must be a `type` (or undefined:
 * a new owned struct from `allocate`, disposed again if the move fails);
 * `move` moves into the target natively and returns the status. */
function moveInto<T extends CStruct>(fn: string, type: Function & { prototype: T }, dest: T | undefined, allocate: () => T, move: (target: T) => number): T {
  if (dest !== undefined && !(dest instanceof type)) throw argumentError(fn, "dest", `a ${type.name} or undefined`, dest);
  const target = dest ?? allocate();
  try {
    check(move(target));
  } catch (error) {
    if (!dest) target.dispose();
    throw error;
  }
  return target;
}

/** What CSchema, CArray and CDeviceArray share: an address, who owns the
 * memory there, and release/move/dispose. */
export abstract class CStruct implements Disposable {
  #address: number;
  #slot: OwnedSlot | null;
  /** The base struct this one is a child (or the array member) of. */
  readonly parent: CStruct | null;

  protected constructor(token: symbol, readonly kind: CStructKind, address: number, owned: boolean, parent: CStruct | null) {
    internalConstruction(kind === "ArrowSchema" ? "CSchema" : kind === "ArrowArray" ? "CArray" : "CDeviceArray", token, structToken,
      "use allocate() or at(address)");
    if (!address) throw new InvalidArgumentError(Status.invalid_argument, `${kind} pointer is NULL`);
    this.#address = address;
    this.parent = parent;
    this.#slot = null;
    if (owned) {
      this.#slot = { address, kind, token: track(`owned ${kind}`) };
      safetyNet.register(this, this.#slot, this);
    }
  }

  protected static allocateSlot(kind: CStructKind): number {
    const address = native.abd_alloc_zeroed(sizes[kind]);
    if (address === null) throw new OutOfMemoryError(Status.out_of_memory, `out of memory allocating an ${kind}`);
    return address;
  }

  /** True when this object owns (and will free) the struct's memory. */
  get owned(): boolean {
    return this.#slot !== null;
  }

  /** The struct's address, for C functions. Throws once an owned struct
   * was disposed (its memory is freed). */
  get address(): Pointer {
    if (!this.#address) throw new ReleasedError(Status.released, `this ${this.kind} was disposed; its memory is freed`);
    return asPointer(this.#address);
  }

  /** The address, checked to be readable: the memory exists and every base
   * struct above it is still alive. */
  protected readable(): number {
    const address = Number(this.address);
    const gone = this.releasedAncestor();
    if (gone) throw new ReleasedError(Status.released, `the ${gone.kind} this ${this.kind} belongs to was released; its children are gone`);
    return address;
  }

  private releasedAncestor(): CStruct | null {
    for (let p = this.parent; p; p = p.parent) if (p.released) return p;
    return null;
  }

  /** True once the struct's release has run or it was moved out (or the
   * base struct it belongs to was released, or this object was disposed). */
  get released(): boolean {
    if (!this.#address || this.releasedAncestor()) return true;
    // Its own `release == NULL` (an ArrowDeviceArray's is its array's).
    return this.kind === "ArrowSchema" ? schemaFields.released(this.#address) : arrayFields.released(this.#address);
  }

  /** Calls the struct's release callback, if it is not released yet.
   * Idempotent. Only base structs may be released: a borrowed child must be
   * moved out first (`moveChild`). */
  release(): void {
    if (this.released) return;
    if (this.parent && !(this.parent instanceof CDeviceArray)) {
      throw new InvalidArgumentError(Status.invalid_argument, `only a base ${this.kind} may be released; move this child out first (moveChild)`);
    }
    releaseAt(this.kind, this.#address);
  }

  /** Releases what the struct holds; frees it if this object owns it.
   * Idempotent. */
  dispose(): void {
    if (!this.#address) return;
    if (!this.parent) this.release();
    const slot = this.#slot;
    this.#address = 0;
    if (slot) {
      this.#slot = null;
      safetyNet.unregister(this);
      untrack(slot.token);
      native.abd_free(asPointer(slot.address));
    }
  }

  /** What console.log and Bun.inspect print (native/inspect.ts). */
  [inspectCustom](): string { return showCStruct(this); }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

/** C: struct ArrowSchema, read in place. */
export class CSchema extends CStruct {
  private constructor(token: symbol, address: number, owned: boolean, parent: CStruct | null) {
    super(token, "ArrowSchema", address, owned, parent);
  }

  /** A new, released ArrowSchema this object owns (a place to move into or
   * for a producer to fill). */
  static allocate(): CSchema {
    return new CSchema(structToken, CStruct.allocateSlot("ArrowSchema"), true, null);
  }

  /** The struct's address, for C. Throws once an owned struct was
   * disposed (its memory is freed). */
  override get address(): StructPointer<"ArrowSchema"> {
    return branded(Number(super.address));
  }

  /** A borrowed view of the caller's ArrowSchema at `address`. */
  static at(address: StructPointer<"ArrowSchema">): CSchema {
    return new CSchema(structToken, viewAddress("CSchema.at", "ArrowSchema", address), false, null);
  }

  /** The format string (null for a NULL format). */
  get format(): string | null { return schemaFields.format(this.readable()); }
  /** The field name (null for a NULL name). */
  get name(): string | null { return schemaFields.name(this.readable()); }
  /** ArrowSchema.flags (see `Flags`). */
  get flags(): number { return schemaFields.flags(this.readable()); }
  /** Whether the NULLABLE flag is set. */
  get nullable(): boolean { return (this.flags & 2) !== 0; }
  /** Metadata as a Map (the last value wins for repeated keys). */
  get metadata(): Map<string, string> { return new Map(this.metadataPairs); }
  /** Metadata as every key/value pair in order, repeats kept (empty for
   * NULL metadata); bounds-checked natively before it is read. */
  get metadataPairs(): [string, string][] { return readMetadata(schemaFields.metadataAddress(this.readable())); }
  /** ArrowSchema.n_children. */
  get nChildren(): number { return schemaFields.nChildren(this.readable()); }

  /** A borrowed view of child `i` (valid while this struct is alive). */
  child(i: number): CSchema {
    integerArg("CSchema.child", "i", i, 0);
    const n = this.nChildren;
    if (!(Number.isInteger(i) && i >= 0 && i < n)) throw new OutOfRangeError(Status.out_of_range, `child ${i} is out of the schema's ${n} children`);
    return new CSchema(structToken, schemaFields.child(this.readable(), i), false, this);
  }

  /** Borrowed views of every child. */
  get children(): CSchema[] {
    return Array.from({ length: this.nChildren }, (_, i) => this.child(i));
  }

  /** A borrowed view of the dictionary's schema, or null. */
  get dictionary(): CSchema | null {
    const address = schemaFields.dictionary(this.readable());
    return address ? new CSchema(structToken, address, false, this) : null;
  }

  /** Moves this struct into `dest` (a new owned struct if omitted) and
   * returns it; this one is left released. */
  move(dest?: CSchema): CSchema {
    return moveInto("CSchema.move", CSchema, dest, () => CSchema.allocate(), (target) => native.abd_schema_move(asPointer(this.readable()), target.address));
  }

  /** Moves child `i` out into `dest` (a new owned struct if omitted). The
   * parent must be released next; its release skips the moved child. */
  moveChild(i: number, dest?: CSchema): CSchema {
    integerArg("CSchema.moveChild", "i", i, 0);
    return moveInto("CSchema.moveChild", CSchema, dest, () => CSchema.allocate(), (target) => native.abd_schema_move_child(asPointer(this.readable()), BigInt(i), target.address));
  }
}

/** Set by CArray's static block: the ArrowArray view of a device array's
 * embedded array. */
let memberArray: (device: CDeviceArray) => CArray;

/** C: struct ArrowArray, read in place. Buffer contents need the schema:
 * import the pair (`ImportedArray.fromArray`) for typed buffer views. */
export class CArray extends CStruct {
  private constructor(token: symbol, address: number, owned: boolean, parent: CStruct | null) {
    super(token, "ArrowArray", address, owned, parent);
  }

  /** A new owned, zeroed (released) ArrowArray in native memory (e.g. for
   * a producer to fill). */
  static allocate(): CArray {
    return new CArray(structToken, CStruct.allocateSlot("ArrowArray"), true, null);
  }

  /** The struct's address, for C. Throws once an owned struct was
   * disposed (its memory is freed). */
  override get address(): StructPointer<"ArrowArray"> {
    return branded(Number(super.address));
  }

  /** A borrowed view of the caller's ArrowArray at `address`. */
  static at(address: StructPointer<"ArrowArray">): CArray {
    return new CArray(structToken, viewAddress("CArray.at", "ArrowArray", address), false, null);
  }

  // The array member of a device array (CDeviceArray.array): a view whose
  // parent is the device array, made through the private constructor.
  static {
    memberArray = (device) => new CArray(structToken, Number(device.address), false, device);
  }

  /** ArrowArray.length. */
  get length(): number { return arrayFields.length(this.readable()); }
  /** -1 when the producer did not compute it. */
  get nullCount(): number { return arrayFields.nullCount(this.readable()); }
  /** ArrowArray.offset. */
  get offset(): number { return arrayFields.offset(this.readable()); }
  /** ArrowArray.n_buffers. */
  get nBuffers(): number { return arrayFields.nBuffers(this.readable()); }
  /** ArrowArray.n_children. */
  get nChildren(): number { return arrayFields.nChildren(this.readable()); }

  /** Address of buffer `i` (0 for NULL). */
  bufferAddress(i: number): number {
    integerArg("CArray.bufferAddress", "i", i, 0);
    const n = this.nBuffers;
    if (!(Number.isInteger(i) && i >= 0 && i < n)) throw new OutOfRangeError(Status.out_of_range, `buffer ${i} is out of the array's ${n} buffers`);
    return arrayFields.buffer(this.readable(), i);
  }

  /** Every buffer address, in order (0 for NULL). */
  get bufferAddresses(): number[] {
    return Array.from({ length: this.nBuffers }, (_, i) => this.bufferAddress(i));
  }

  /** A borrowed view of child `i` (valid while this struct is alive). */
  child(i: number): CArray {
    integerArg("CArray.child", "i", i, 0);
    const n = this.nChildren;
    if (!(Number.isInteger(i) && i >= 0 && i < n)) throw new OutOfRangeError(Status.out_of_range, `child ${i} is out of the array's ${n} children`);
    return new CArray(structToken, arrayFields.child(this.readable(), i), false, this);
  }

  /** Borrowed views of every child. */
  get children(): CArray[] {
    return Array.from({ length: this.nChildren }, (_, i) => this.child(i));
  }

  /** A borrowed view of the dictionary array, or null. */
  get dictionary(): CArray | null {
    const address = arrayFields.dictionary(this.readable());
    return address ? new CArray(structToken, address, false, this) : null;
  }

  /** Moves this struct into `dest` (a new owned struct if omitted) and
   * returns it; this one is left released. */
  move(dest?: CArray): CArray {
    return moveInto("CArray.move", CArray, dest, () => CArray.allocate(), (target) => native.abd_array_move(asPointer(this.readable()), target.address));
  }

  /** Moves child `i` out into `dest` (a new owned struct if omitted). The
   * parent must be released next; its release skips the moved child. */
  moveChild(i: number, dest?: CArray): CArray {
    integerArg("CArray.moveChild", "i", i, 0);
    return moveInto("CArray.moveChild", CArray, dest, () => CArray.allocate(), (target) => native.abd_array_move_child(asPointer(this.readable()), BigInt(i), target.address));
  }
}

/** C: struct ArrowDeviceArray, read in place. */
export class CDeviceArray extends CStruct {
  private constructor(token: symbol, address: number, owned: boolean) {
    super(token, "ArrowDeviceArray", address, owned, null);
  }

  /** A new owned, zeroed (released) ArrowDeviceArray in native memory
   * (e.g. for a producer to fill). */
  static allocate(): CDeviceArray {
    return new CDeviceArray(structToken, CStruct.allocateSlot("ArrowDeviceArray"), true);
  }

  /** The struct's address, for C. Throws once an owned struct was
   * disposed (its memory is freed). */
  override get address(): StructPointer<"ArrowDeviceArray"> {
    return branded(Number(super.address));
  }

  /** A borrowed view of the caller's ArrowDeviceArray at `address`. */
  static at(address: StructPointer<"ArrowDeviceArray">): CDeviceArray {
    return new CDeviceArray(structToken, viewAddress("CDeviceArray.at", "ArrowDeviceArray", address), false);
  }

  /** The embedded ArrowArray (a view; it lives and dies with this struct). */
  get array(): CArray {
    return memberArray(this);
  }

  /** ArrowDeviceArray.device_type. */
  get deviceType(): number { return deviceArrayFields.deviceType(this.readable()); }
  /** `deviceType` by name, e.g. "CPU", "CUDA". */
  get deviceTypeName(): string { return deviceTypeName(this.deviceType); }
  /** ArrowDeviceArray.device_id. */
  get deviceId(): number { return deviceArrayFields.deviceId(this.readable()); }
  /** Address of the producer's sync event (a pointer to the event), 0 if none. */
  get syncEvent(): number { return deviceArrayFields.syncEvent(this.readable()); }

  /** Moves this struct into `dest` (a new owned struct if omitted) and
   * returns it; this one is left released. */
  move(dest?: CDeviceArray): CDeviceArray {
    return moveInto("CDeviceArray.move", CDeviceArray, dest, () => CDeviceArray.allocate(), (target) => native.abd_device_array_move(asPointer(this.readable()), target.address));
  }
}
