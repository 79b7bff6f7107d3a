/**
 * What `console.log` and `Bun.inspect` print for the library's handles:
 * one header line (class, format, type, length, null count, device) and
 * one line per child below it, indented by depth, at most `maxLines`
 * lines in all (one screen), so that a handle can be debugged as a
 * nanoarrow or pyarrow object is: by printing it. Bun and Node.js both
 * call the method under `inspectCustom` (Bun.inspect.custom is the same
 * registered symbol). Reading never throws: a part that cannot be read
 * (released, moved out, disposed) says so in place of its values.
 */
import { deviceTypeName } from "../core/abi/layout.ts";

/** The registered symbol Bun.inspect and Node's util.inspect call. */
export const inspectCustom: unique symbol = Symbol.for("nodejs.util.inspect.custom") as never;

/** Lines one printed handle may take. */
export const maxLines = 24;

/** One node of a printed tree: its line, and its children's (made only
 * when printed, so a wide tree costs only the lines shown). */
export type Shown = { line: string; children?: () => Shown[] };

/** A field as printed: its name (quoted only where it needs to be). */
function fieldName(name: string | null): string {
  if (name === null) return "(no name)";
  return /^[A-Za-z_][\w$]*$/.test(name) ? name : JSON.stringify(name);
}

/** `format` printed: quoted, with its type name where it is known. */
export function formatText(format: string | null, typeName?: string): string {
  const quoted = format === null ? "(NULL format)" : JSON.stringify(format);
  return typeName === undefined ? quoted : `${typeName} ${quoted}`;
}

/** "CPU", or "CUDA 0": a device type and id. */
export function deviceText(deviceType: number, deviceId: number): string {
  const name = Number.isInteger(deviceType) ? deviceTypeName(deviceType) : String(deviceType);
  return deviceId < 0 ? name : `${name} ${deviceId}`;
}

/** What `read` returns, or "(unreadable: ...)" when it throws. */
export function readOr(read: () => string): string {
  try {
    return read();
  } catch (error) {
    return `(unreadable: ${(error as Error)?.message ?? String(error)})`;
  }
}

/** "name: type "f", length 3, nulls 0" for one child line. */
export function childLine(name: string | null, rest: string): string {
  return `${fieldName(name)}: ${rest}`;
}

/** `header`, then the children of `root`, depth-first, indented two
 * spaces per level; past `maxLines` the rest is counted, not shown. */
export function renderTree(header: string, children: Shown[]): string {
  const lines = [header];
  let hidden = 0;
  const visit = (nodes: Shown[], depth: number): void => {
    for (const node of nodes) {
      if (lines.length >= maxLines - 1) {
        hidden++;
        continue;
      }
      lines.push(`${"  ".repeat(depth)}${node.line}`);
      if (node.children !== undefined) {
        let below: Shown[];
        try {
          below = node.children();
        } catch (error) {
          below = [{ line: `(unreadable: ${(error as Error)?.message ?? String(error)})` }];
        }
        visit(below, depth + 1);
      }
    }
  };
  visit(children, 1);
  if (hidden > 0) lines.push(`  ... ${hidden} more not shown`);
  return lines.join("\n");
}
