/**
 * The printed form of the C struct views (c_structs.ts: CSchema, CArray,
 * CDeviceArray), and the pieces of it the handles' printed forms share
 * (inspect_handles.ts). inspect.ts renders it; only public getters are
 * read, and a struct's `kind` says which view it is.
 */
import type { CArray, CDeviceArray, CSchema, CStruct } from "./c_structs.ts";
import { childLine, deviceText, formatText, readOr, renderTree, type Shown } from "./inspect.ts";

/** ` "name"`, or nothing for a NULL or empty name. */
export function named(name: string | null): string {
  return name === null || name === "" ? "" : ` ${JSON.stringify(name)}`;
}

export function schemaChildren(schema: CSchema): Shown[] {
  const shown: Shown[] = schema.children.map((child) => ({ line: childLine(child.name, formatText(child.format)), children: () => schemaChildren(child) }));
  const dictionary = schema.dictionary;
  if (dictionary !== null) shown.push({ line: `dictionary: ${formatText(dictionary.format)}`, children: () => schemaChildren(dictionary) });
  return shown;
}

export function arrayLine(array: CArray): string {
  return `length ${array.length}, nulls ${array.nullCount}, offset ${array.offset}, ${array.nBuffers} buffers`;
}

export function arrayChildren(array: CArray): Shown[] {
  const shown: Shown[] = array.children.map((child, i) => ({ line: `[${i}]: ${arrayLine(child)}`, children: () => arrayChildren(child) }));
  const dictionary = array.dictionary;
  if (dictionary !== null) shown.push({ line: `dictionary: ${arrayLine(dictionary)}`, children: () => arrayChildren(dictionary) });
  return shown;
}

function released(struct: CStruct): boolean {
  try {
    return struct.released;
  } catch {
    return true;
  }
}

export function showCStruct(struct: CStruct): string {
  const ownership = struct.owned ? "owned" : "borrowed";
  if (released(struct)) return `${struct.constructor.name} (released, ${ownership})`;
  return readOr(() => {
    if (struct.kind === "ArrowSchema") {
      const schema = struct as CSchema;
      return renderTree(`CSchema${named(schema.name)} ${formatText(schema.format)}, ${schema.nChildren} children, ${ownership}`, schemaChildren(schema));
    }
    if (struct.kind === "ArrowDeviceArray") {
      const device = struct as CDeviceArray;
      const array = device.array;
      return renderTree(`CDeviceArray ${deviceText(device.deviceType, device.deviceId)}, ${arrayLine(array)}, ${array.nChildren} children, ${ownership}`, arrayChildren(array));
    }
    const array = struct as CArray;
    return renderTree(`CArray ${arrayLine(array)}, ${array.nChildren} children, ${ownership}`, arrayChildren(array));
  });
}
