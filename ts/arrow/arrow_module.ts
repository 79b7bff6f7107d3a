/**
 * The apache-arrow module this package converts with, checked once at load.
 *
 * The peer range (package.json peerDependencies, `supportedArrowRange`) is
 * what the code supports: 21.2.0 is the first release that exports
 * BinaryView, LargeList and Utf8View. A named ESM import of an export the
 * installed version lacks fails at link time, before any code of this
 * package runs, with "Export named 'BinaryView' not found", which names
 * neither this package nor the version it needs. So the names that not
 * every apache-arrow release has come from here instead: this module reads
 * them through a namespace import (which links with any version), and
 * first checks the installed version against the range, throwing an
 * UnsupportedError that names both.
 */
import * as arrow from "apache-arrow";
import { registerArrowClasses, supportedArrowRange } from "../core/args.ts";
import { Status, UnsupportedError } from "../core/errors.ts";

// Argument errors tell an object of another apache-arrow copy by these.
registerArrowClasses({
  Table: arrow.Table, RecordBatch: arrow.RecordBatch, RecordBatchReader: arrow.RecordBatchReader, Vector: arrow.Vector,
  Data: arrow.Data, Schema: arrow.Schema, Field: arrow.Field, DataType: arrow.DataType,
});

/** The installed apache-arrow's version, or null where its package.json
 * cannot be read (a bundle that did not carry it). */
function installedVersion(): string | null {
  try {
    const version = (require("apache-arrow/package.json") as { version?: unknown }).version;
    return typeof version === "string" ? version : null;
  } catch {
    return null;
  }
}

/** Why `version` (and the module's exports) cannot be used, or null. */
export function arrowVersionProblem(version: string | null, exports: Record<string, unknown>): string | null {
  const missing = ["BinaryView", "LargeList", "Utf8View"].filter((name) => exports[name] === undefined);
  const outside = version !== null && !Bun.semver.satisfies(version, supportedArrowRange);
  if (!outside && missing.length === 0) return null;
  const found = version === null ? "an apache-arrow of unknown version" : `apache-arrow ${version}`;
  const lacks = missing.length > 0 ? ` (it lacks ${missing.join(", ")})` : "";
  return `bun-arrow-device needs apache-arrow ${supportedArrowRange} (its peer dependency), but this app loads ${found}${lacks}: install a version in that range, e.g. \`bun add apache-arrow@21.2.0\``;
}

const problem = arrowVersionProblem(installedVersion(), arrow as unknown as Record<string, unknown>);
if (problem !== null) throw new UnsupportedError(Status.unsupported, problem);

/** The installed apache-arrow's version ("unknown" in a bundle without its package.json). */
export const arrowVersion: string = installedVersion() ?? "unknown";

export const BinaryView = arrow.BinaryView;
export const LargeList = arrow.LargeList;
export const Utf8View = arrow.Utf8View;
