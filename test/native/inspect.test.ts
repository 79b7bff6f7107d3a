/**
 * What console.log / Bun.inspect print for every handle class: format,
 * length, nulls, device and children, one screen at most, compared with
 * the stored text in test/data/inspect/handles.txt (UPDATE_INSPECT=1
 * rewrites it after a deliberate change).
 */
import { expect, test } from "bun:test";
import { inspect } from "node:util";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tableFromArrays, Table, Int32, Field, makeData, Struct, Schema, RecordBatch } from "apache-arrow";
import { exportArray, exportSchema, exportStream } from "../../ts/index.ts";
import { exportAsyncStream } from "../../ts/device.ts";
import { AsyncStreamConsumer, CArray, CDeviceArray, CSchema, ImportedArray, ImportedStream } from "../../ts/raw.ts";
import { repoRoot } from "../helpers/cli_run.ts";

const stored = join(repoRoot, "test", "data", "inspect", "handles.txt");

function table(): Table {
  return tableFromArrays({ id: Int32Array.from([1, 2, 3]), price: Float64Array.from([9.5, 3, 7.25]), name: ["a", "b", null] });
}

/** A batch of 40 int32 columns: wider than one screen. */
function wide(): RecordBatch {
  const fields = Array.from({ length: 40 }, (_, i) => new Field(`c${i}`, new Int32(), false));
  const children = fields.map(() => makeData({ type: new Int32(), length: 1, data: Int32Array.of(7) }));
  return new RecordBatch(new Schema(fields), makeData({ type: new Struct(fields), length: 1, children }));
}

function printed(): string[] {
  const sections: string[] = [];
  const show = (title: string, handle: unknown) => sections.push(`## ${title}\n${Bun.inspect(handle)}`);
  const t = table();
  const exported = exportArray(t.batches[0]!);
  show("ExportedArray (device_array)", exported);
  show("CSchema.at(exported.schema)", CSchema.at(exported.schema));
  show("CDeviceArray.at(exported.array)", CDeviceArray.at(exported.array));
  const cpu = exportArray(t.getChild("price")!, { as: "array" });
  show("ExportedArray (array)", cpu);
  show("CArray.at(exported.array)", CArray.at(cpu.array));
  cpu.release();
  show("ExportedArray, released", cpu);
  const schema = exportSchema(t.schema);
  show("ExportedArray (schema)", schema);
  schema.release();
  const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
  show("ExportedArray, moved into an import", exported);
  show("ImportedArray", imported);
  show("ImportedArray.child(2)", imported.child(2));
  show("ImportedArray.slice(1, 2)", imported.slice(1, 2));
  show("RawArray (imported.root.child(0))", imported.root.child(0));
  const owned = CSchema.allocate();
  show("CSchema.allocate(), released", owned);
  owned.dispose();
  const stream = exportStream(t);
  show("ExportedStream", stream);
  const reader = ImportedStream.fromDeviceArrayStream(stream.stream);
  show("ExportedStream, moved out", stream);
  show("ImportedStream", reader);
  reader.release();
  show("ImportedStream, released", reader);
  stream.release();
  show("ExportedStream, released", stream);
  const many = exportArray(wide());
  const big = ImportedArray.fromDeviceArray(many.schema, many.array);
  show("ImportedArray of 40 columns (one screen)", big);
  big.dispose();
  imported.dispose();
  show("ImportedArray, disposed", imported);
  return sections;
}

/** An async consumer before and after it read one table's batches. */
async function printedAsync(): Promise<string[]> {
  const consumer = new AsyncStreamConsumer({ queueDepth: 2 });
  const sections = [`## AsyncStreamConsumer, new\n${Bun.inspect(consumer)}`];
  const run = exportAsyncStream(table(), consumer.handler);
  for await (const item of consumer.arrays()) item.array.dispose();
  await run.done;
  await consumer.closed;
  sections.push(`## AsyncStreamConsumer, read to the end\n${Bun.inspect(consumer)}`);
  return sections;
}

test("every handle class prints its format, length, nulls, device and children (stored text)", async () => {
  const text = [...printed(), ...(await printedAsync())].join("\n\n") + "\n";
  if (process.env.UPDATE_INSPECT === "1") writeFileSync(stored, text);
  expect(text).toBe(readFileSync(stored, "utf8"));
  // One screen: no handle takes more than 24 lines.
  for (const section of text.split("\n\n")) expect(section.split("\n").length).toBeLessThanOrEqual(25);
});

test("console.log, node:util inspect and Bun.inspect print the same, nested too", () => {
  const exported = exportArray(table().batches[0]!);
  try {
    const own = Bun.inspect(exported);
    expect(own).toStartWith('ExportedArray<device_array> "+s", length 3');
    expect(inspect(exported)).toBe(own);
    expect(Bun.inspect({ handle: exported })).toContain(own.split("\n")[0]!);
    const child = Bun.spawnSync([process.execPath, "-e", `
      const { exportArray } = await import(${JSON.stringify(join(repoRoot, "ts", "index.ts"))});
      const { tableFromArrays } = await import("apache-arrow");
      console.log(exportArray(tableFromArrays({ id: Int32Array.from([1, 2, 3]) }).batches[0]));`], { cwd: repoRoot, stdout: "pipe", stderr: "pipe" });
    expect(child.stderr.toString()).toBe("");
    expect(child.stdout.toString()).toBe('ExportedArray<device_array> "+s", length 3, nulls 0, CPU\n  id: "i", length 3, nulls 0\n');
  } finally {
    exported.release();
  }
});
