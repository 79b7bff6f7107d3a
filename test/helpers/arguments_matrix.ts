/**
 * Child process of test/core/arguments.test.ts: calls every public function,
 * class and static method of the entry points with every wrong kind of
 * value in every parameter (the others valid), and prints one JSON line
 * per call. Run apart so that a crash fails the test instead of killing
 * the runner; the line printed (to stderr) before each call names the
 * case that crashed.
 *
 * The table below gives valid arguments per export; an export missing
 * from it is reported (the test then fails), so new exports get covered.
 */
import { writeSync } from "node:fs";
import { Field, Int32, RecordBatch, Schema, Table, makeVector } from "apache-arrow";
import { resolve } from "node:path";

/** The entry points whose exports are checked (the package's exports map). */
export const entryModules = ["../../ts/index.ts", "../../ts/raw.ts", "../../ts/device.ts", "../../ts/diagnostics.ts", "../../ts/python.ts", "../../ts/adbc.ts"];

/** The wrong kinds of value tried in every parameter. */
/** Longer than any name a message may quote (40 characters). */
export const secretString = `%%secret-${"x".repeat(60)}%%`;

const badValues: Record<string, () => unknown> = {
  NaN: () => Number.NaN,
  Infinity: () => Number.POSITIVE_INFINITY,
  "-Infinity": () => Number.NEGATIVE_INFINITY,
  fraction: () => 1.5,
  negative: () => -8,
  unaligned: () => 12,
  true: () => true,
  string: () => secretString,
  "{}": () => ({}),
  "[]": () => [],
  Uint8Array: () => new Uint8Array(8),
  null: () => null,
  undefined: () => undefined,
  hugeBigint: () => 2n ** 70n,
  function: () => () => 0,
  handle: () => handleObject(),
  // Plausible but wrong addresses: aligned, but no struct is there.
  address8: () => 8,
  address4096: () => 4096,
  "{ address: 16 }": () => ({ address: 16 }),
};

type Mod = Record<string, unknown>;
let m: Mod;
let handles: { release(): void }[] = [];

function handleObject(): unknown {
  const h = (m.exportArray as (b: unknown) => { release(): void })(batch());
  handles.push(h);
  return h;
}

const batch = (): RecordBatch => new Table({ x: makeVector(Int32Array.of(1, 2, 3)) }).batches[0];
const exported = (as = "device_array") => {
  const h = (m.exportArray as (b: unknown, o: unknown) => { schema: number; array: number; release(): void })(batch(), { as });
  handles.push(h);
  return h;
};
const imported = () => {
  const h = exported();
  return (m.ImportedArray as { fromDeviceArray(s: number, a: number): { root: unknown; dispose(): void } }).fromDeviceArray(h.schema, h.array);
};
const importedStream = () => {
  const s = (m.exportStream as (src: unknown, o: unknown) => { stream: number; release(): void })([batch()], { as: "stream" });
  handles.push(s);
  return (m.ImportedStream as { fromArrayStream(p: number): unknown }).fromArrayStream(s.stream);
};
const arrayStream = (as: string) => {
  const s = (m.exportStream as (src: unknown, o: unknown) => { stream: number; release(): void })([batch()], { as });
  handles.push(s);
  return s.stream;
};
/** An empty (released) ArrowArrayStream slot to move a stream into. */
const emptyStreamSlot = () => {
  const slot = new (m.ExportedStream as new (kind: string) => { stream: number; release(): void })("stream");
  handles.push(slot);
  return slot.stream;
};
const rawNode = () => ({ format: "i", length: 2, buffers: [null, new Int32Array(2)] });
const fakeAdbc = resolve(import.meta.dir, "..", "..", "build", "fixtures", "libfake_adbc.so");
const adbcDatabases: { close(): void }[] = [];
const adbcDatabase = () => {
  const db = new (m.Database as new (o: unknown) => { connect(): { statement(): unknown }; close(): void })({ driver: fakeAdbc });
  adbcDatabases.push(db);
  return db;
};
const adbcTable = () => new Table({ x: makeVector(Int32Array.of(1)) });
const consumer = () => new (m.AsyncStreamConsumer as new () => { handler: number })();

/** Values a parameter legitimately takes among the bad ones (optional
 * parameters take undefined, nullable structs null, options {}). */
const OPT = ["undefined", "{}"];
const NULLABLE = ["null", "undefined"];
/** Plain integers, where any int32 is meaningful (device types, ids). */
const INTS = ["negative", "unaligned", "address8", "address4096"];
/** Non-negative integers (counts, sizes, indexes in range). */
const COUNTS = ["unaligned", "address8", "address4096"];
/** Every bad value (predicates). */
const ANY = ["NaN", "Infinity", "-Infinity", "fraction", "negative", "unaligned", "true", "string", "{}", "[]", "Uint8Array", "null", "undefined", "hugeBigint", "function", "handle", "address8", "address4096", "{ address: 16 }"];

type Entry =
  | { skip: string }
  | {
      /** Valid arguments (fresh each call). */
      args: () => unknown[];
      /** Per parameter, the bad-value names it accepts. */
      accepts?: string[][];
      /** The valid call may throw this error name (no device here). */
      validThrows?: string;
      /** Not called with valid arguments (why). */
      noValidCall?: string;
      construct?: boolean;
      /** For an instance method (`Class#method`): a fresh object to call it on. */
      self?: () => unknown;
    };

/** An error class: (status, message), both checked. */
const errorClass: Entry = { args: () => [1, "message"], accepts: [INTS, ["string"]], construct: true };
const internalCtor = (args: () => unknown[]): Entry => ({ args, construct: true, noValidCall: "made by the library, not by users" });

export const table: Record<string, Entry> = {
  ArrowDeviceError: errorClass, CallbackError: errorClass, CancelledError: errorClass,
  DeviceError: errorClass, DeviceUnavailableError: errorClass, InternalError: errorClass, InvalidArgumentError: errorClass,
  InvalidFormatError: errorClass, InvalidLayoutError: errorClass,
  OutOfMemoryError: errorClass, OutOfRangeError: errorClass, ReleasedError: errorClass,
  TooDeepError: errorClass, UnknownDeviceError: errorClass, UnsupportedError: errorClass, WrongThreadError: errorClass,
  LayoutMismatchError: { args: () => [["a problem"]], accepts: [["[]"]], construct: true },
  LibraryLoadError: { args: () => ["message", "path", ["path"], "linux-x64-gnu"], accepts: [["string"], ["string"], ["[]", "undefined"], ["string", "undefined"]], construct: true },
  StreamError: { args: () => [12, "message", 5, "producer"], accepts: [INTS, ["string"], INTS, ["string", "null"]], construct: true },
  AsyncStreamError: { args: () => [5, "message", new Map(), false], accepts: [INTS, ["string"], [], ["true"]], construct: true },
  PythonError: { args: () => ["what", "ValueError: raised"], accepts: [["string"], ["string"]], construct: true },
  PythonUnavailableError: { args: () => ["message", ["here"]], accepts: [["string"], ["[]"]], construct: true },
  // ADBC, on the fake driver of test/fixtures/fake_adbc.c (real drivers: test/peers/adbc_*.test.ts).
  AdbcError: { args: () => [5, "message", "HY000", 42, new Map()], accepts: [COUNTS, ["string"], ["null"], ["null", ...INTS], []], construct: true },
  Database: { args: () => [{ driver: fakeAdbc }], construct: true },
  Connection: internalCtor(() => [Symbol("not the token"), {}, {}, {}]),
  Statement: internalCtor(() => [Symbol("not the token"), {}, 8, {}]),
  AdbcHandle: internalCtor(() => [Symbol("not the token"), {}, "Database", null]),
  manifestDirectories: { args: () => [] },
  "Connection.borrow": { args: () => [(adbcDatabase().connect() as unknown as { share(): unknown }).share()] },
  ...methods("Database", () => adbcDatabase(), {
    connect: [{}], setOption: ["k", "v"], getOption: ["k", "string"], close: [],
  }, { connect: [[...OPT, "{ address: 16 }"]], setOption: [["string"], ["string", "true", "unaligned", "negative", "address8", "address4096", "fraction", "Uint8Array", "hugeBigint"]], getOption: [["string"], ["undefined"]] },
  { setOption: "AdbcError", getOption: "AdbcError" }),
  ...methods("AdbcHandle", () => adbcDatabase(), { setOption: ["k", "v"], getOption: ["k", "string"], close: [] },
    { setOption: [["string"], ["string", "true", "unaligned", "negative", "address8", "address4096", "fraction", "Uint8Array", "hugeBigint"]], getOption: [["string"], ["undefined"]] },
    { setOption: "AdbcError", getOption: "AdbcError" }),
  ...methods("Connection", () => adbcDatabase().connect(), {
    statement: [], prepare: ["SELECT 1"], query: ["SELECT 1"], recordBatches: ["SELECT 1"], execute: ["SELECT 1"],
    ingest: () => [adbcTable(), "t", {}], getInfo: [[0]], getObjects: [{}], getTableSchema: ["t", {}], getTableTypes: [], readPartition: [new Uint8Array(1)],
    commit: [], rollback: [], cancel: [], setOption: ["k", "v"], getOption: ["k", "string"], share: [], close: [],
  }, {
    prepare: [["string"]], query: [["string"], OPT, OPT], recordBatches: [["string"], OPT], execute: [["string"], OPT], ingest: [[], ["string"], OPT], getInfo: [["undefined", "[]"]], getObjects: [OPT], getTableSchema: [["string"], OPT],
    readPartition: [["Uint8Array"]], setOption: [["string"], ["string", "true", "unaligned", "negative", "address8", "address4096", "fraction", "Uint8Array", "hugeBigint"]], getOption: [["string"], ["undefined"]],
  }, {
    prepare: "AdbcError", query: "AdbcError", execute: "AdbcError", ingest: "AdbcError", getInfo: "AdbcError", getObjects: "AdbcError", getTableSchema: "AdbcError",
    getTableTypes: "AdbcError", readPartition: "AdbcError", commit: "AdbcError", rollback: "AdbcError", cancel: "AdbcError", getOption: "AdbcError",
    recordBatches: "AdbcError", setOption: "AdbcError",
  }),
  ...methods("Statement", () => adbcDatabase().connect().statement(), {
    setSqlQuery: ["SELECT 1"], prepare: [], bind: () => [adbcTable()], parameterSchema: [], executeSchema: [], executeUpdate: [], executeQuery: [{}], recordBatches: [{}],
    executeStream: [], executePartitions: [], cancel: [], setOption: ["k", "v"], getOption: ["k", "string"], close: [],
  }, {
    setSqlQuery: [["string"]], executeQuery: [OPT], recordBatches: [OPT], setOption: [["string"], ["string", "true", "unaligned", "negative", "address8", "address4096", "fraction", "Uint8Array", "hugeBigint"]], getOption: [["string"], ["undefined"]],
  }, {
    prepare: "AdbcError", parameterSchema: "AdbcError", executeSchema: "AdbcError", executeUpdate: "AdbcError", executeQuery: "AdbcError",
    executeStream: "AdbcError", executePartitions: "AdbcError", cancel: "AdbcError", getOption: "AdbcError", recordBatches: "AdbcError",
    setOption: "AdbcError",
  }),
  // The Python bridge: what needs a Python is tested in test/peers/python.test.ts.
  Python: internalCtor(() => [Symbol("not the token"), {}, "libpython", "via"]),
  PyObject: internalCtor(() => [Symbol("not the token"), {}, 8]),
  fromPython: { args: () => [null, {}], noValidCall: "needs a Python object (test/peers/python.test.ts)" },
  schemaFromPython: { args: () => [null], noValidCall: "needs a Python object (test/peers/python.test.ts)" },
  loadPython: { skip: "starts a Python (test/peers/python.test.ts)" },
  locatePython: { skip: "runs a Python to ask where it is (test/peers/python.test.ts)" },
  toPython: { skip: "starts a Python (test/peers/python.test.ts)" },
  loadedPython: { args: () => [] },
  shimPath: { args: () => [] },
  structPointer: { args: () => ["ArrowSchema", 4096], accepts: [[], ["address8", "address4096"]] },

  // The protocol (docs/protocol.md): predicates answer for any value.
  LibraryCapsule: { args: () => [exported()], accepts: [["handle"]], construct: true, noValidCall: "takes the handle over (made by the protocol methods)" },
  arrowProtocol: { args: () => [batch()] },
  arrowProtocolInstalled: { args: () => [] },
  installArrowProtocol: { args: () => [] },
  uninstallArrowProtocol: { args: () => [] },
  isCapsule: { args: () => [null], accepts: [ANY] },
  isArrayProducer: { args: () => [null], accepts: [ANY] },
  isSchemaProducer: { args: () => [null], accepts: [ANY] },
  isStreamProducer: { args: () => [null], accepts: [ANY] },
  callBlocking: { args: () => [() => 0], accepts: [["function"]] },
  // The readers (ts/arrow/stream_api.ts): an empty array is an empty
  // list of ImportedArray batches.
  importTable: { args: () => [arrayStream("device_stream"), {}], accepts: [["[]"], OPT] },
  recordBatches: { args: () => [importedStream(), {}], accepts: [[], OPT] },
  // Diagnostics of the loader: no parameters (extra arguments are ignored).
  librarySource: { args: () => [] },
  platformId: { args: () => [] },
  AsyncExport: internalCtor(() => [null, null]),
  AsyncRecordBatchStream: { args: () => [{}], accepts: [OPT], construct: true },
  AsyncStreamConsumer: { args: () => [{}], accepts: [OPT], construct: true },
  "CArray.allocate": { args: () => [] },
  "CArray.at": { args: () => [(m.CArray as { allocate(): { address: number } }).allocate().address] },
  "CDeviceArray.allocate": { args: () => [] },
  "CDeviceArray.at": { args: () => [(m.CDeviceArray as { allocate(): { address: number } }).allocate().address] },
  "CSchema.allocate": { args: () => [] },
  "CSchema.at": { args: () => [(m.CSchema as { allocate(): { address: number } }).allocate().address] },
  // No public constructor: refused from JS whatever it is given.
  CArray: internalCtor(() => [Symbol("not the token"), 8, false, null]),
  CDeviceArray: internalCtor(() => [Symbol("not the token"), 8, false]),
  CSchema: internalCtor(() => [Symbol("not the token"), 8, false, null]),
  DeviceEvent: internalCtor(() => [Symbol("not the token"), null, 0, 8]),
  DeviceMemory: internalCtor(() => [Symbol("not the token"), null, 0, "device", 8, 8]),
  DeviceRuntime: internalCtor(() => [Symbol("not the token"), "cuda", "lib", 1, 1]),
  HostRegistration: internalCtor(() => [Symbol("not the token"), null, 0, new Uint8Array(8), 8]),
  DeviceStream: internalCtor(() => [Symbol("not the token"), null, 0, 8]),
  ExportedArray: { args: () => ["device_array", "label"], accepts: [[], ["undefined", "string"]], construct: true },
  ExportedStream: { args: () => ["stream", "label"], accepts: [[], ["undefined", "string"]], construct: true },
  ImportedArray: internalCtor(() => [Symbol("not the token"), (imported() as unknown as { ownerAddress: number }).ownerAddress, null, "ImportedArray", false]),
  "ImportedArray.fromArray": { args: () => { const h = exported("array"); return [h.schema, h.array, {}]; }, accepts: [NULLABLE, NULLABLE, OPT] },
  "ImportedArray.fromDeviceArray": { args: () => { const h = exported(); return [h.schema, h.array, {}]; }, accepts: [NULLABLE, NULLABLE, OPT] },
  ImportedStream: internalCtor(() => [Symbol("not the token"), 8, 0]),
  "ImportedStream.fromArrayStream": { args: () => [arrayStream("stream"), {}], accepts: [NULLABLE, OPT] },
  "ImportedStream.fromDeviceArrayStream": { args: () => [arrayStream("device_stream"), {}], accepts: [NULLABLE, OPT] },
  RawArray: { args: () => [imported(), 0, null], accepts: [[], [], [...NULLABLE, "{}", "{ address: 16 }"]], construct: true },
  // Only reads the number an address-like value holds (no struct is read).
  addressOf: { args: () => [(m.CSchema as { allocate(): unknown }).allocate()], accepts: [[...NULLABLE, "address8", "address4096", "{ address: 16 }"]] },
  arrayStreamAsDeviceStream: { args: () => [arrayStream("stream")] },
  consumeNatively: { args: () => { const h = exported(); return [h.schema, h.array, "full"]; }, accepts: [NULLABLE, NULLABLE, NULLABLE] },
  copyArrayToDevice: { args: () => { const h = exported(); return [h.schema, h.array, { device: "cuda" }]; }, accepts: [NULLABLE, NULLABLE, []], validThrows: "DeviceUnavailableError" },
  counters: { args: () => [] },
  debugEnabled: { skip: "a boolean" },
  decodeMetadataBytes: { args: () => [(m.encodeMetadata as (e: unknown) => Uint8Array)([["a", "b"]])], accepts: [["Uint8Array"]] },
  deviceAvailability: { args: () => ["cuda"] },
  deviceRuntime: { args: () => ["cuda"], validThrows: "DeviceUnavailableError" },
  deviceStreamAsArrayStream: { args: () => [arrayStream("device_stream")] },
  deviceTypeName: { args: () => [1], accepts: [INTS] },
  drainReleased: { args: () => [] },
  encodeMetadata: { args: () => [[["a", "b"]]], accepts: [["null", "undefined", "[]"]] },
  exportArray: { args: () => [batch(), {}], accepts: [[], OPT] },
  // An empty source is reported to the consumer (on_error), not thrown.
  exportAsyncStream: { args: () => [[batch()], consumer().handler, {}], accepts: [["[]"], [], OPT] },
  exportBatches: { args: () => [[batch()], {}], accepts: [["[]"], OPT] },
  exportRawArray: { args: () => [rawNode(), {}], accepts: [[], OPT] },
  exportSchema: { args: () => [new Schema([new Field("x", new Int32())])] },
  exportStream: { args: () => [[batch()], {}], accepts: [[], OPT] },
  fnv1a32: { args: () => [new Uint8Array(4)], accepts: [["Uint8Array"]] },
  formatOf: { args: () => [new Int32()] },
  importRecordBatch: { args: () => { const h = exported(); return [h.schema, h.array, {}]; }, accepts: [NULLABLE, NULLABLE, OPT] },
  importData: { args: () => [(imported() as { root: unknown }).root, {}], accepts: [[], OPT] },
  importDataType: { args: () => [(imported() as { root: unknown }).root, {}], accepts: [[], OPT] },
  importField: { args: () => [(imported() as { root: unknown }).root, {}], accepts: [[], OPT] },
  importSchema: { args: () => [importedStream(), {}], accepts: [[], OPT] },
  importVector: { args: () => { const h = exported("array"); return [h.schema, h.array, {}]; }, accepts: [NULLABLE, NULLABLE, OPT] },
  isHostAccessible: { args: () => [1], accepts: [INTS] },
  kindOfDeviceType: { args: () => [2], accepts: [INTS] },
  layoutProblems: { args: () => [JSON.stringify({ pointer_size: 8, structs: {} })], accepts: [[], ["undefined"]] },
  libraryPath: { args: () => [] },
  liveHandles: { args: () => [] },
  nonZeroCounters: { args: () => [] },
  platformDir: { args: () => [] },
  reexport: { args: () => [imported(), {}], accepts: [[], OPT] },
  relay: { args: () => { const h = exported(); return [h.schema, h.array, {}]; }, accepts: [NULLABLE, NULLABLE, OPT] },
  relayArray: { args: () => { const h = exported("array"); return [h.schema, h.array, {}]; }, accepts: [NULLABLE, NULLABLE, OPT] },
  schemaPlan: { args: () => [{ format: "i" }] },
  setJsWorkSpin: { args: () => [20_000], accepts: [COUNTS] },
  targetDeviceType: { args: () => ["cuda", "device"], accepts: [[], ["undefined"]] },
  toDevice: { args: () => [batch(), { device: "cuda" }], validThrows: "DeviceUnavailableError" },
  toHost: { args: () => [imported(), {}], accepts: [[], OPT] },
  typeSignature: { args: () => [new Int32()] },
  wrapDeviceMemory: { args: () => [rawNode(), { device: "cuda", id: 0 }] },

  // Instance methods.
  ...methods("ExportedArray", () => exported(), { release: [] }),
  ...methods("ExportedStream", () => { const s = (m.exportStream as (src: unknown) => unknown)([batch()]); handles.push(s as { release(): void }); return s; }, { release: [] }),
  ...methods("CSchema", () => (m.CSchema as { at(a: number): unknown }).at(exported().schema), {
    child: [0], move: [], moveChild: [0], release: [], dispose: [], readable: [], releasedAncestor: [],
  }, { move: [OPT.slice(0, 1)], moveChild: [COUNTS, OPT.slice(0, 1)], child: [COUNTS] }, { child: "OutOfRangeError" }),
  ...methods("CArray", () => (m.CArray as { at(a: number): unknown }).at(exported("array").array), {
    child: [0], move: [], moveChild: [0], release: [], dispose: [], readable: [], releasedAncestor: [], bufferAddress: [0],
  }, { move: [OPT.slice(0, 1)], moveChild: [COUNTS, OPT.slice(0, 1)], child: [COUNTS], bufferAddress: [COUNTS] }, { child: "OutOfRangeError", moveChild: "OutOfRangeError" }),
  ...methods("CDeviceArray", () => (m.CDeviceArray as { at(a: number): unknown }).at(exported().array), {
    move: [], release: [], dispose: [], readable: [], releasedAncestor: [],
  }, { move: [OPT.slice(0, 1)] }),
  ...methods("ImportedArray", () => imported(), {
    child: [0], slice: [0, 1], dictionaryArray: [], reexport: [{}], node: [0],
    bufferMemory: [1, 4], prefetchAll: [],
    releaseToGC: [], toHost: [{}], dispose: [],
  }, { child: [COUNTS], reexport: [OPT], toHost: [OPT], bufferMemory: [COUNTS, ["undefined", ...COUNTS]], slice: [COUNTS, COUNTS], node: [COUNTS] },
  { dictionaryArray: "InvalidArgumentError" }),
  ...methods("RawArray", () => (imported() as { root: unknown }).root, {
    child: [0], bufferIndex: [0], bufferAddress: [0], bufferSize: [0], bufferKind: [0], byteLength: [0], memory: [0], buffer: [0], describe: [],
  }, {}, {}),
  ...methods("ImportedStream", () => importedStream(), {
    emptyBatch: [], next: [], nextAsync: [], arrays: [], arraysAsync: [], relay: [], moveTo: () => [emptyStreamSlot()], release: [],
  }, {}, {}),
  ...methods("AsyncRecordBatchStream", () => new (m.AsyncRecordBatchStream as new () => unknown)(), { batches: [], ready: [], arrays: [], cancel: [] }, {}, {}, ["batches", "ready", "arrays"]),
  ...methods("AsyncStreamConsumer", () => new (m.AsyncStreamConsumer as new () => unknown)(), { ready: [], arrays: [], cancel: [] }, {}, {}, ["ready", "arrays"]),
  ...skipMethods("DeviceRuntime", ["device", "devices", "allocate", "createStream", "createEvent", "synchronizeEvent", "pointerInfo", "copy", "registerHost", "memoryPool"]),
  ...skipMethods("HostRegistration", ["unregister"]),
  ...skipMethods("DeviceMemory", ["hostView", "free"]),
  ...skipMethods("DeviceStream", ["synchronize", "waitEvent", "destroy"]),
  ...skipMethods("DeviceEvent", ["record", "synchronize", "query", "destroy"]),
  ...skipMethods("PyObject", ["toString", "attr", "call", "dispose"]),
  ...skipMethods("Python", ["exec", "eval", "import", "addSysPath", "counters"]),
};

/** Entries for `cls`'s instance methods: valid arguments per method, the
 * bad values each parameter accepts, the error a valid call may throw, and
 * the methods that wait for a peer (not called with valid arguments). */
function methods(
  cls: string, self: () => unknown, valid: Record<string, unknown[] | (() => unknown[])>, accepts: Record<string, string[][]> = {},
  validThrows: Record<string, string> = {}, waits: string[] = [],
): Record<string, Entry> {
  return Object.fromEntries(Object.entries(valid).map(([method, args]) => [`${cls}#${method}`, {
    self, args: () => (typeof args === "function" ? args() : [...args]), accepts: accepts[method],
    ...(validThrows[method] ? { validThrows: validThrows[method] } : {}),
    ...(waits.includes(method) ? { noValidCall: "waits for a producer" } : {}),
  } satisfies Entry]));
}

/** Methods of handles that need a device runtime or a Python: tested
 * where those are (test/device/device_fake.test.ts, test/peers/python.test.ts). */
function skipMethods(cls: string, names: string[]): Record<string, Entry> {
  return Object.fromEntries(names.map((name) => [`${cls}#${name}`, { skip: "needs a device runtime or a Python (test/device/device_fake.test.ts, test/peers/python.test.ts)" }]));
}

/** Every callable export: functions, classes, classes' static methods,
 * and their instances' methods (`Class#method`, inherited ones included,
 * except Error's and Object's and names starting with `_`). */
export function callables(mod: Mod): { name: string; fn: (...args: unknown[]) => unknown; owner: unknown }[] {
  const out: { name: string; fn: (...args: unknown[]) => unknown; owner: unknown }[] = [];
  for (const [name, value] of Object.entries(mod)) {
    if (typeof value !== "function") {
      continue;
    }
    out.push({ name, fn: value as (...args: unknown[]) => unknown, owner: undefined });
    for (const key of Object.getOwnPropertyNames(value)) {
      if (["length", "name", "prototype", "caller", "arguments"].includes(key)) continue;
      const member = (value as unknown as Record<string, unknown>)[key];
      if (typeof member === "function") out.push({ name: `${name}.${key}`, fn: member as (...args: unknown[]) => unknown, owner: value });
    }
    const methods = new Set<string>();
    for (let proto = (value as { prototype?: object }).prototype; proto && proto !== Object.prototype && proto !== Error.prototype; proto = Object.getPrototypeOf(proto)) {
      for (const key of Object.getOwnPropertyNames(proto)) {
        const method = Object.getOwnPropertyDescriptor(proto, key)?.value;
        if (key === "constructor" || key.startsWith("_") || typeof method !== "function" || methods.has(key)) continue;
        methods.add(key);
        out.push({ name: `${name}#${key}`, fn: method as (...args: unknown[]) => unknown, owner: undefined });
      }
    }
  }
  return out;
}

export type CaseResult = {
  name: string;
  param: number;
  bad: string;
  accepted: boolean;
  outcome: "threw" | "returned";
  errorName?: string;
  typed?: boolean;
  message?: string;
};

async function settle(result: unknown): Promise<unknown> {
  if (result && typeof (result as Promise<unknown>).then === "function") return await result;
  if (result && typeof (result as AsyncIterator<unknown>).next === "function" && Symbol.asyncIterator in (result as object)) {
    return await (result as AsyncIterator<unknown>).next();
  }
  return result;
}

async function main(): Promise<void> {
  const out: string[] = [];
  const missing: string[] = [];
  // The table's helpers reach every entry point's exports through `m`; an
  // export re-exported by two entry points is called once.
  const modules = await Promise.all(entryModules.map(async (path) => (await import(path)) as Mod));
  m = Object.assign({}, ...modules) as Mod;
  const ArrowDeviceError = m.ArrowDeviceError as new (...a: never[]) => Error;
  const seen = new Set<string>();
  for (const module of modules) {
    for (const { name, fn, owner } of callables(module)) {
      if (seen.has(name)) continue;
      seen.add(name);
      const only = process.env.ARGUMENTS_ONLY?.split(","); // some exports, to reproduce a case
      if (only && !only.includes(name)) continue;
      const entry = table[name];
      if (!entry) {
        missing.push(name);
        continue;
      }
      if ("skip" in entry) continue;
      const call = (args: unknown[]) => (entry.construct ? Reflect.construct(fn, args) : Reflect.apply(fn, entry.self ? entry.self() : owner, args));
      if (!entry.noValidCall) {
        let validError: string | null = null;
        try {
          await settle(call(entry.args()));
        } catch (error) {
          validError = (error as Error).name;
        }
        out.push(JSON.stringify({ kind: "valid", name, error: validError, allowed: entry.validThrows ?? null }));
      }
      const arity = entry.args().length;
      for (let param = 0; param < arity; param++) {
        for (const [bad, make] of Object.entries(badValues)) {
          const accepted = entry.accepts?.[param]?.includes(bad) ?? false;
          const args = entry.args();
          args[param] = make();
          process.stderr.write(`calling ${name} with ${bad} as parameter ${param}\n`);
          const result: CaseResult = { name, param, bad, accepted, outcome: "returned" };
          try {
            await settle(call(args));
          } catch (error) {
            result.outcome = "threw";
            result.errorName = (error as Error)?.name;
            result.typed = error instanceof ArrowDeviceError;
            result.message = String((error as Error)?.message);
          }
          out.push(JSON.stringify({ kind: "case", ...result }));
        }
      }
      for (const h of handles.splice(0)) {
        try {
          h.release();
        } catch {
          // released or moved already
        }
      }
    }
  }
  out.push(JSON.stringify({ kind: "missing", names: missing }));
  // Written synchronously: process.exit() right after an asynchronous
  // write to a pipe cut the output short (a truncated last line).
  writeSync(1, `${out.join("\n")}\n`);
  process.exit(0);
}

if (import.meta.main) await main();
