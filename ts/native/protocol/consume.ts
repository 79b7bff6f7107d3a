/**
 * The consumer half of the protocol (docs/protocol.md), for the import
 * entry points: get a capsule from any producer, preferring the device
 * methods as the Python spec asks, check it, hand its addresses to the
 * import (which moves the structs out), then dispose the capsule, which
 * releases whatever the import did not move. Capsules given directly are
 * consumed the same way. Depends only on the protocol symbols.
 */
import { InvalidArgumentError, Status } from "../../core/errors.ts";
import {
  ArrowCArray, ArrowCDeviceArray, ArrowCDeviceStream, ArrowCStream, isCapsule,
  type ArrayProducer, type ArrowCapsule, type StreamProducer,
} from "./symbols.ts";

/** An array capsule's structs: `array` is an ArrowDeviceArray* when `device`. */
export type ArrayStructs = { schema: number; array: number; device: boolean };
/** A stream capsule's struct: an ArrowDeviceArrayStream* when `device`. */
export type StreamStructs = { stream: number; device: boolean };

function isAddress(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0;
}

/** `source` itself when it is a capsule, else what its device method (or,
 * without one, its CPU method) returns. */
function capsuleFrom(source: object, device: symbol, cpu: symbol): ArrowCapsule {
  if (isCapsule(source)) return source;
  // Each method property read once (it may be a getter).
  const methods = source as Record<symbol, unknown>;
  let symbol = device;
  let method = methods[device];
  if (typeof method !== "function") {
    symbol = cpu;
    method = methods[cpu];
  }
  if (typeof method !== "function") throw new InvalidArgumentError(Status.invalid_argument, `[${String(symbol)}] is ${describe(method, source)}, not a method`);
  const capsule: unknown = method.call(source);
  if (!isCapsule(capsule)) throw new InvalidArgumentError(Status.invalid_argument, `[${String(symbol)}]() returned ${describe(capsule, source)}, not a capsule (an object with kind and [Symbol.dispose])`);
  return capsule;
}

function describe(value: unknown, producer: unknown): string {
  if (value === producer) return "the producer itself";
  if (value === null || value === undefined) return String(value);
  if (typeof value === "function") return "a function";
  return typeof value === "object" ? `a ${value.constructor?.name ?? "object"}` : `a ${typeof value} (${String(value)})`;
}

/** Runs `use` on the array structs of `source` (a producer or an array
 * capsule), then disposes the capsule, whatever `use` did. Each of the
 * capsule's properties is read once (they may be getters). */
export function withArrayCapsule<T>(source: ArrayProducer | ArrowCapsule, use: (structs: ArrayStructs) => T): T {
  const capsule = capsuleFrom(source, ArrowCDeviceArray, ArrowCArray);
  try {
    const kind = capsule.kind;
    const device = kind === "arrow_device_array";
    if (!device && kind !== "arrow_array") {
      throw new InvalidArgumentError(Status.invalid_argument, `expected an "arrow_array" or "arrow_device_array" capsule, got "${kind}"`);
    }
    const schema = capsule.schema;
    const array = device ? capsule.deviceArray : capsule.array;
    if (!isAddress(schema) || !isAddress(array)) {
      throw new InvalidArgumentError(Status.invalid_argument, `the "${kind}" capsule has no schema or ${device ? "deviceArray" : "array"} address`);
    }
    return use({ schema, array, device });
  } finally {
    capsule[Symbol.dispose]();
  }
}

/** Runs `use` on the stream struct of `source` (a producer or a stream
 * capsule), then disposes the capsule, whatever `use` did. Each of the
 * capsule's properties is read once. */
export function withStreamCapsule<T>(source: StreamProducer | ArrowCapsule, use: (structs: StreamStructs) => T): T {
  const capsule = capsuleFrom(source, ArrowCDeviceStream, ArrowCStream);
  try {
    const kind = capsule.kind;
    const device = kind === "arrow_device_array_stream";
    if (!device && kind !== "arrow_array_stream") {
      throw new InvalidArgumentError(Status.invalid_argument, `expected an "arrow_array_stream" or "arrow_device_array_stream" capsule, got "${kind}"`);
    }
    const stream = capsule.stream;
    if (!isAddress(stream)) throw new InvalidArgumentError(Status.invalid_argument, `the "${kind}" capsule has no stream address`);
    return use({ stream, device });
  } finally {
    capsule[Symbol.dispose]();
  }
}
