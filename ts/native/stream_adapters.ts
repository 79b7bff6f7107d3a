/**
 * Stream adapters, C to C (zig/stream/convert.zig): a CPU ArrowArrayStream
 * presented as an ArrowDeviceArrayStream and back, without touching any
 * batch. Each moves the source stream in (the caller's struct is left
 * released, success or not) and returns a handle whose `stream` a C
 * consumer can take; batches pass through by move and outlive both.
 */
import { errorFor } from "../core/errors.ts";
import { lastError, native } from "../core/ffi/library.ts";
import { ExportedStream } from "./exported_stream.ts";
import { addressArg } from "../core/args.ts";
import { asPointer } from "../core/abi/structs.ts";
import { probeStruct } from "../core/abi/probe.ts";
import { type StructPointer } from "../core/abi/pointers.ts";

/** An `ArrowArrayStream*` as a CPU `ArrowDeviceArrayStream` (device_id
 * -1, no sync event). */
export function arrayStreamAsDeviceStream(source: StructPointer<"ArrowArrayStream">): ExportedStream<"device_stream"> {
  const address = addressArg("arrayStreamAsDeviceStream", "source", source);
  probeStruct("arrayStreamAsDeviceStream", "source", "ArrowArrayStream", address, "owned");
  const handle = new ExportedStream("device_stream" as const, "ArrowDeviceArrayStream adapter");
  const status = native.abd_stream_to_device(asPointer(address), handle.stream);
  if (status !== 0) {
    const error = errorFor(status, lastError());
    handle.release();
    throw error;
  }
  return handle;
}

/** An `ArrowDeviceArrayStream*` on a host-readable device (CPU,
 * CUDA_HOST, ROCM_HOST, CUDA_MANAGED) as an `ArrowArrayStream`. Each array
 * is checked against the stream's device_type and its sync event waited
 * on. Other devices are refused with UnsupportedError. */
export function deviceStreamAsArrayStream(source: StructPointer<"ArrowDeviceArrayStream">): ExportedStream<"stream"> {
  const address = addressArg("deviceStreamAsArrayStream", "source", source);
  probeStruct("deviceStreamAsArrayStream", "source", "ArrowDeviceArrayStream", address, "owned");
  const handle = new ExportedStream("stream" as const, "ArrowArrayStream adapter");
  const status = native.abd_stream_from_device(asPointer(address), handle.stream);
  if (status !== 0) {
    const error = errorFor(status, lastError());
    handle.release();
    throw error;
  }
  return handle;
}
