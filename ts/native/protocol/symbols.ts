/**
 * The JS Arrow exchange protocol (docs/protocol.md): five global symbols,
 * one per method of Python's PyCapsule interface, the capsule objects they
 * return, and the kwargs rule. This module depends on nothing: any layer
 * (and any other library, through `Symbol.for`) can use it.
 */
import { Status, UnsupportedError } from "../../core/errors.ts";

/** `obj[ArrowCSchema]()` -> an "arrow_schema" capsule. */
export const ArrowCSchema: unique symbol = Symbol.for("__arrow_c_schema__") as never;
/** `obj[ArrowCArray](options?)` -> an "arrow_array" capsule (CPU data only). */
export const ArrowCArray: unique symbol = Symbol.for("__arrow_c_array__") as never;
/** `obj[ArrowCDeviceArray](options?)` -> an "arrow_device_array" capsule. */
export const ArrowCDeviceArray: unique symbol = Symbol.for("__arrow_c_device_array__") as never;
/** `obj[ArrowCStream](options?)` -> an "arrow_array_stream" capsule (CPU data only). */
export const ArrowCStream: unique symbol = Symbol.for("__arrow_c_stream__") as never;
/** `obj[ArrowCDeviceStream](options?)` -> an "arrow_device_array_stream" capsule. */
export const ArrowCDeviceStream: unique symbol = Symbol.for("__arrow_c_device_stream__") as never;

/** The capsule kinds, as PyCapsule names. */
export type CapsuleKind = "arrow_schema" | "arrow_array" | "arrow_device_array" | "arrow_array_stream" | "arrow_device_array_stream";
/** Every capsule kind. */
export const capsuleKinds: readonly CapsuleKind[] = ["arrow_schema", "arrow_array", "arrow_device_array", "arrow_array_stream", "arrow_device_array_stream"];

/**
 * What a protocol method returns. Addresses are plain numbers: `schema`
 * (`struct ArrowSchema*`, for the schema and array kinds), `array`
 * (`struct ArrowArray*`, "arrow_array"), `deviceArray` (`struct
 * ArrowDeviceArray*`, "arrow_device_array"), `stream` (`struct
 * ArrowArrayStream*` or `struct ArrowDeviceArrayStream*`, the stream kinds).
 *
 * Ownership: the capsule owns the structs until a consumer moves them out
 * (bitwise copy, then release = NULL in the capsule's struct). Disposing
 * the capsule (`[Symbol.dispose]`, or garbage collection) releases every
 * struct whose release is still non-NULL and frees the capsule's memory,
 * once. A consumer moves what it takes, then disposes the capsule.
 */
export interface ArrowCapsule extends Disposable {
  readonly kind: CapsuleKind;
  readonly schema?: number | undefined;
  readonly array?: number | undefined;
  readonly deviceArray?: number | undefined;
  readonly stream?: number | undefined;
}

/** Options of the array and stream methods (schema takes none). */
export type ProtocolOptions = {
  /** A schema the consumer would like ("arrow_schema" capsule, or an object
   * with an `[ArrowCSchema]` method). Borrowed: the producer reads it and
   * neither moves nor releases it. Honoured where the producer can,
   * otherwise ignored: the consumer checks what it got. */
  requestedSchema?: ArrowCapsule | SchemaProducer | null;
  /** Reserved, as the Python spec's **kwargs: anything else that is not
   * undefined is refused with UnsupportedError. */
  [option: string]: unknown;
};

/** An object with the schema method. */
export type SchemaProducer = { [ArrowCSchema](options?: ProtocolOptions): ArrowCapsule };
/** An object with an array method (CPU or device). */
export type ArrayProducer = { [ArrowCArray]?(options?: ProtocolOptions): ArrowCapsule; [ArrowCDeviceArray]?(options?: ProtocolOptions): ArrowCapsule };
/** An object with a stream method (CPU or device). */
export type StreamProducer = { [ArrowCStream]?(options?: ProtocolOptions): ArrowCapsule; [ArrowCDeviceStream]?(options?: ProtocolOptions): ArrowCapsule };

/** The kwargs rule: every option but `known` must be undefined. */
export function checkOptions(options: unknown, known: readonly string[], method: string): ProtocolOptions {
  if (options === undefined || options === null) return {};
  if (typeof options !== "object") throw new UnsupportedError(Status.unsupported, `${method}: options must be an object, not ${typeof options}`);
  for (const [key, value] of Object.entries(options)) {
    if (value !== undefined && !known.includes(key)) {
      throw new UnsupportedError(Status.unsupported, `${method}: option "${key}" is not supported by this producer (supported: ${known.length ? known.join(", ") : "none"})`);
    }
  }
  return options as ProtocolOptions;
}

function hasMethod(source: unknown, symbol: symbol): boolean {
  return (typeof source === "object" || typeof source === "function") && source !== null && typeof (source as Record<symbol, unknown>)[symbol] === "function";
}

/** Whether `source` is a capsule (any producer's). */
export function isCapsule(source: unknown): source is ArrowCapsule {
  return typeof source === "object" && source !== null && capsuleKinds.includes((source as ArrowCapsule).kind) && typeof (source as ArrowCapsule)[Symbol.dispose] === "function";
}

/** Whether `source` offers an array method (or is an array capsule). */
export function isArrayProducer(source: unknown): source is ArrayProducer | ArrowCapsule {
  if (isCapsule(source)) return source.kind === "arrow_array" || source.kind === "arrow_device_array";
  return hasMethod(source, ArrowCDeviceArray) || hasMethod(source, ArrowCArray);
}

/** Whether `source` offers a stream method (or is a stream capsule). */
export function isStreamProducer(source: unknown): source is StreamProducer | ArrowCapsule {
  if (isCapsule(source)) return source.kind === "arrow_array_stream" || source.kind === "arrow_device_array_stream";
  return hasMethod(source, ArrowCDeviceStream) || hasMethod(source, ArrowCStream);
}

/** Whether `source` offers the schema method. */
export function isSchemaProducer(source: unknown): source is SchemaProducer {
  return hasMethod(source, ArrowCSchema);
}
