/**
 * The JSON Schema of `bench --json` documents (docs/cli.md prints the same
 * text; a test keeps the two equal), and a validator for the subset of JSON
 * Schema it uses: type, enum, const, required, properties,
 * additionalProperties: false, items, minimum. `chart` validates its input
 * with it, so a wrong file gets a message naming the field.
 */

import { deviceKindNames } from "../core/ffi/device_loader.ts";

/** The `schema` value of every result document of this shape. */
export const benchSchemaId = "bun-arrow-device/bench/3";

export type JsonSchema = {
  $schema?: string;
  title?: string;
  description?: string;
  type?: "object" | "array" | "string" | "number" | "integer" | "boolean" | "null" | ("string" | "null" | "integer" | "number" | "object")[];
  enum?: (string | null)[];
  const?: string;
  required?: string[];
  properties?: Record<string, JsonSchema>;
  additionalProperties?: false;
  items?: JsonSchema;
  minimum?: number;
};

const measurement: JsonSchema = {
  type: "object", required: ["what", "timing", "medianNs", "minNs", "maxNs", "gbPerSecond"], additionalProperties: false,
  properties: {
    what: { type: "string", description: "the calls timed" },
    timing: { enum: ["event", "wall"], description: "event: CUDA/HIP events on the stream around the call; wall: the host clock" },
    medianNs: { type: "number", minimum: 0, description: "median nanoseconds per run" },
    minNs: { type: "number", minimum: 0, description: "nanoseconds of the fastest run" },
    maxNs: { type: "number", minimum: 0, description: "nanoseconds of the slowest run" },
    gbPerSecond: { type: ["number", "null"], minimum: 0, description: "bytes / medianNs for a copy (transfer); null for allocate and export_import, which copy nothing" },
  },
};

const runtime: JsonSchema = {
  type: "object", additionalProperties: false,
  required: ["kind", "available", "reason", "library", "driverVersion", "driverVersionText", "fake", "devices"],
  properties: {
    kind: { enum: [...deviceKindNames] },
    available: { type: "boolean" },
    reason: { type: ["string", "null"], description: "why it is not available" },
    library: { type: ["string", "null"], description: "driver library loaded" },
    driverVersion: { type: ["integer", "null"], description: "cuDriverGetVersion / hipDriverGetVersion" },
    driverVersionText: { type: ["string", "null"], description: "major.minor" },
    fake: { type: "boolean", description: "a test stand-in, not a GPU" },
    devices: {
      type: "array",
      items: {
        type: "object", required: ["kind", "id", "name", "totalMemoryBytes"], additionalProperties: false,
        properties: {
          kind: { enum: [...deviceKindNames] }, id: { type: "integer", minimum: 0 }, name: { type: "string" },
          totalMemoryBytes: { type: "integer", minimum: 0 },
        },
      },
    },
  },
};

export const benchJsonSchema: JsonSchema = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  title: "bun-arrow-device bench result",
  type: "object", additionalProperties: false,
  required: ["schema", "createdAt", "versions", "machine", "runtimes", "realGpu", "figures", "warnings"],
  properties: {
    schema: { const: benchSchemaId },
    createdAt: { type: "string", description: "ISO 8601 time of the run" },
    versions: {
      type: "object", required: ["package", "library", "bun", "apacheArrow"], additionalProperties: false,
      properties: {
        package: { type: "string" }, library: { type: "string", description: "path of libarrow_device" },
        bun: { type: "string" }, apacheArrow: { type: "string" },
      },
    },
    machine: {
      type: "object", required: ["os", "osRelease", "platform", "cpuModel", "cpuCores", "memoryBytes"], additionalProperties: false,
      properties: {
        os: { type: "string" }, osRelease: { type: "string" }, platform: { type: "string", description: "platform id, e.g. linux-x64-gnu" },
        cpuModel: { type: "string" }, cpuCores: { type: "integer", minimum: 1 }, memoryBytes: { type: "integer", minimum: 0 },
      },
    },
    runtimes: { type: "array", items: runtime },
    realGpu: { type: "boolean", description: "whether any figure was measured on a real GPU" },
    figures: {
      type: "array",
      items: {
        type: "object", additionalProperties: false,
        required: ["suite", "operation", "runtime", "deviceId", "fake", "bytes", "repeats", "ours", "baseline", "pageableBaseline", "endToEnd", "ratio", "ratioMin", "ratioMax"],
        properties: {
          suite: { enum: ["transfer", "export_import"] },
          operation: { enum: ["host_to_device", "host_to_device_pinned", "device_to_host", "device_to_device", "allocate", "round_trip"] },
          runtime: { enum: [...deviceKindNames, null] },
          deviceId: { type: ["integer", "null"] },
          fake: { type: "boolean", description: "measured through a fake driver: NOT a GPU figure" },
          bytes: { type: "integer", minimum: 1 },
          repeats: { type: "integer", minimum: 1 },
          ours: measurement,
          baseline: { ...measurement, description: "transfer: the raw driver opened directly (pinned host memory for host copies)" },
          pageableBaseline: { type: ["object", "null"], required: measurement.required, properties: measurement.properties, additionalProperties: false, description: "the raw driver's copy from/to pageable host memory; null where none" },
          endToEnd: { type: ["object", "null"], required: measurement.required, properties: measurement.properties, additionalProperties: false, description: "ours by the host clock, the whole call (transfer); null otherwise" },
          ratio: { type: "number", minimum: 0, description: "baseline.medianNs / ours.medianNs: above 1, ours is faster" },
          ratioMin: { type: "number", minimum: 0, description: "the lowest baseline / ours ratio of one repetition" },
          ratioMax: { type: "number", minimum: 0, description: "the highest baseline / ours ratio of one repetition" },
        },
      },
    },
    warnings: { type: "array", items: { type: "string" } },
  },
};

function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

/** Every way `value` breaks `schema`, as "path: problem" lines (empty: valid).
 * One visit per value: linear in the size of `value`. */
export function schemaProblems(value: unknown, schema: JsonSchema = benchJsonSchema, path = "$"): string[] {
  const problems: string[] = [];
  collectProblems(value, schema, path, problems);
  return problems;
}

function collectProblems(value: unknown, schema: JsonSchema, path: string, problems: string[]): void {
  const actual = typeOf(value);
  if (schema.type !== undefined) {
    const allowed = Array.isArray(schema.type) ? schema.type : [schema.type];
    const ok = allowed.some((t) => t === actual || (t === "number" && actual === "integer"));
    if (!ok) {
      problems.push(`${path}: expected ${allowed.join(" or ")}, found ${actual}`);
      return;
    }
  }
  if (schema.const !== undefined && value !== schema.const) problems.push(`${path}: expected ${JSON.stringify(schema.const)}`);
  if (schema.enum !== undefined && !schema.enum.includes(value as string | null)) {
    problems.push(`${path}: expected one of ${schema.enum.map((e) => JSON.stringify(e)).join(", ")}`);
  }
  if (schema.minimum !== undefined && typeof value === "number" && !(value >= schema.minimum)) {
    problems.push(`${path}: ${value} is below the minimum ${schema.minimum}`);
  }
  if (actual === "object" && (schema.properties || schema.required)) {
    const record = value as Record<string, unknown>;
    for (const key of schema.required ?? []) if (!Object.hasOwn(record, key)) problems.push(`${path}: missing "${key}"`);
    for (const key of Object.keys(record)) {
      const sub = schema.properties && Object.hasOwn(schema.properties, key) ? schema.properties[key] : undefined;
      if (sub) collectProblems(record[key], sub, `${path}.${key}`, problems);
      else if (schema.additionalProperties === false) problems.push(`${path}: unexpected "${key}"`);
    }
  }
  if (actual === "array" && schema.items) {
    const items = value as unknown[];
    for (let i = 0; i < items.length; i++) collectProblems(items[i], schema.items, `${path}[${i}]`, problems);
  }
}
