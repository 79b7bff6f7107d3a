/**
 * The `requestedSchema` option of the protocol methods (docs/protocol.md):
 * reading it (`withRequested`), and comparing it with a handle's own
 * schema (`sameSchema`). The casts to it, which build apache-arrow
 * objects, are the arrow layer's (arrow/protocol/requested.ts).
 */
import { branded } from "../../core/abi/pointers.ts";
import { InvalidArgumentError, Status } from "../../core/errors.ts";
import { CSchema } from "../c_structs.ts";
import { ArrowCSchema, isCapsule, isSchemaProducer, type ArrowCapsule, type ProtocolOptions, type SchemaProducer } from "./symbols.ts";

/** Whether two schemas are the same field: format, name, flags, metadata
 * (every pair, in order), children and dictionary, at every level. */
export function sameSchema(a: CSchema, b: CSchema): boolean {
  if (a.format !== b.format || a.name !== b.name || a.flags !== b.flags || a.nChildren !== b.nChildren) return false;
  const pairsA = a.metadataPairs;
  const pairsB = b.metadataPairs;
  if (pairsA.length !== pairsB.length || pairsA.some(([k, v], i) => k !== pairsB[i][0] || v !== pairsB[i][1])) return false;
  for (let i = 0; i < a.nChildren; i++) if (!sameSchema(a.child(i), b.child(i))) return false;
  const dictionaryA = a.dictionary;
  const dictionaryB = b.dictionary;
  if (dictionaryA === null || dictionaryB === null) return dictionaryA === dictionaryB;
  return sameSchema(dictionaryA, dictionaryB);
}

/** Runs `use` on the requested schema of `options` (null when none). A
 * capsule given is borrowed; one this function asked a producer for is
 * disposed afterwards. */
export function withRequested<T>(options: ProtocolOptions, use: (requested: CSchema | null) => T): T {
  const given = options.requestedSchema;
  if (given === undefined || given === null) return use(null);
  let asCapsule: ArrowCapsule | null;
  let asProducer: SchemaProducer | null;
  try {
    asCapsule = isCapsule(given) ? given : null;
    asProducer = asCapsule === null && isSchemaProducer(given) ? given : null;
  } catch (error) {
    // A revoked Proxy, a throwing getter: what it is cannot be read.
    throw new InvalidArgumentError(Status.invalid_argument, `requestedSchema cannot be read (${String((error as Error)?.message ?? error)}): it must be an "arrow_schema" capsule or an object with a [Symbol.for("__arrow_c_schema__")] method`);
  }
  if (asCapsule !== null) return use(CSchema.at(branded(requestedAddress(asCapsule, "requestedSchema"))));
  if (asProducer !== null) {
    // One call, whose answer must be a capsule: a producer that answers
    // with itself (or another producer) is refused, never followed.
    const capsule: unknown = asProducer[ArrowCSchema]();
    if (!isCapsule(capsule)) {
      throw new InvalidArgumentError(Status.invalid_argument, `requestedSchema[Symbol.for("__arrow_c_schema__")]() returned ${describe(capsule, given)}, not an "arrow_schema" capsule (an object with kind, schema and [Symbol.dispose])`);
    }
    try {
      return use(CSchema.at(branded(requestedAddress(capsule, "the capsule requestedSchema's schema method returned"))));
    } finally {
      capsule[Symbol.dispose]();
    }
  }
  throw new InvalidArgumentError(Status.invalid_argument, "requestedSchema must be an \"arrow_schema\" capsule or an object with a [Symbol.for(\"__arrow_c_schema__\")] method");
}

/** The schema address of an "arrow_schema" capsule, each getter read once. */
function requestedAddress(capsule: ArrowCapsule, what: string): number {
  const kind = capsule.kind;
  if (kind !== "arrow_schema") throw new InvalidArgumentError(Status.invalid_argument, `${what} must be an "arrow_schema" capsule, not "${kind}"`);
  const schema = capsule.schema;
  if (typeof schema !== "number" || !Number.isSafeInteger(schema) || schema <= 0) {
    throw new InvalidArgumentError(Status.invalid_argument, `${what} ("arrow_schema" capsule) has no schema address (schema is ${typeof schema === "number" ? schema : typeof schema})`);
  }
  return schema;
}

function describe(value: unknown, producer: unknown): string {
  if (value === producer) return "the producer itself";
  if (value === null || value === undefined) return String(value);
  if (typeof value === "function") return "a function";
  return typeof value === "object" ? `a ${value.constructor?.name ?? "object"}` : `a ${typeof value} (${String(value)})`;
}

