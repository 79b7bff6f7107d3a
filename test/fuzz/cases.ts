/**
 * Runs one fuzz case, on this library or on Arrow C++ (the reference shim).
 * Both run inside a worker process (worker.ts): a crash there is caught by
 * the driver and reported with its seed and case number.
 *
 * Library side, at every level (`none`, `minimal`, `default`, `full`; at
 * `minimal` only when the tree claims more memory than the generator could
 * give it): import from an ArrowDeviceArray whose every buffer ends against
 * a PROT_NONE page, then at `default` and `full` convert to apache-arrow
 * (with materialization), then dispose. Every error must be typed (an
 * ArrowDeviceError), and the producer must see every struct released
 * exactly once.
 *
 * Arrow C++ side: ImportDeviceArray, then Validate and ValidateFull.
 */
import { ArrowDeviceError, importVector } from "../../ts/index.ts";
import { ImportedArray, type ValidationLevelName } from "../../ts/raw.ts";
import { heldDrop, heldQuickValidation, heldValidation, holdDeviceArray } from "../helpers/arrow_cpp.ts";
import { fx } from "../helpers/fixtures.ts";
import { disposeProduced, produceDevice } from "../helpers/producer.ts";
import type { FuzzCase } from "./generate.ts";

/** What one import did: "ok", or the typed error's code and message. */
export type LibraryOutcome = { level: ValidationLevelName; verdict: string; problems: string[] };

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

function runLevel(c: FuzzCase, level: ValidationLevelName, convert: boolean): LibraryOutcome {
  const problems: string[] = [];
  const schemaReleasesBefore = Number(fx.fx_schema_releases());
  const arrayReleasesBefore = Number(fx.fx_array_releases());
  const produced = produceDevice(c.spec, c.deviceType, c.deviceId);
  const nodes = produced.nodes.length;
  let verdict = "ok";
  try {
    const imported = ImportedArray.fromDeviceArray(produced.schema, produced.array, { validation: level });
    try {
      if (convert) {
        try {
          importVector(imported, { materialize: true });
        } catch (error) {
          if (!(error instanceof ArrowDeviceError)) problems.push(`untyped conversion error: ${describe(error)}`);
        }
      }
    } finally {
      imported.dispose();
    }
  } catch (error) {
    if (!(error instanceof ArrowDeviceError)) problems.push(`untyped import error: ${describe(error)}`);
    verdict = error instanceof ArrowDeviceError ? `${error.code}: ${error.message}` : describe(error);
  }
  if (!produced.schema.released || !produced.array.released) problems.push("the landing structs were not moved in");
  disposeProduced(produced);
  // Exactly once: every node's schema and array released once, none twice,
  // none left (dispose releases at once).
  const schemaReleases = Number(fx.fx_schema_releases()) - schemaReleasesBefore;
  const arrayReleases = Number(fx.fx_array_releases()) - arrayReleasesBefore;
  if (Number(fx.fx_double_releases()) !== 0) problems.push("a struct was released twice");
  if (Number(fx.fx_live_nodes()) !== 0) problems.push(`${fx.fx_live_nodes()} producer nodes still live after dispose`);
  else if (schemaReleases !== nodes || arrayReleases !== nodes) problems.push(`released ${schemaReleases} schemas and ${arrayReleases} arrays of ${nodes} nodes`);
  return { level, verdict, problems };
}

/** The case on this library: one outcome per level it runs at. */
export function runLibraryCase(c: FuzzCase): LibraryOutcome[] {
  fx.fx_set_guarded(1);
  if (c.honest === "no") return [];
  if (c.honest === "buffers") return [runLevel(c, "minimal", false)];
  return [runLevel(c, "none", false), runLevel(c, "minimal", false), runLevel(c, "default", true), runLevel(c, "full", true)];
}

/** Arrow C++'s verdicts on one case: "ok" or "invalid: why" for Validate
 * (`quick`) and ValidateFull (`full`); an import error is both. */
export type ArrowOutcome = { quick: string; full: string };

/** The case on Arrow C++: ImportDeviceArray, then Validate and
 * ValidateFull. Null when not compared (a device other than the CPU, or a
 * tree that lies about its memory). */
export function runArrowCase(c: FuzzCase): ArrowOutcome | null {
  if (c.honest !== "yes" || c.deviceType !== 1) return null;
  fx.fx_set_guarded(1);
  const produced = produceDevice(c.spec, c.deviceType, c.deviceId);
  try {
    let id: number;
    try {
      id = holdDeviceArray(produced.schema.address, produced.array.address);
    } catch (error) {
      const verdict = `invalid: ${describe(error)}`;
      return { quick: verdict, full: verdict };
    }
    try {
      const quick = heldQuickValidation(id);
      const full = heldValidation(id);
      return { quick: quick === null ? "ok" : `invalid: ${quick}`, full: full === null ? "ok" : `invalid: ${full}` };
    } finally {
      heldDrop(id);
    }
  } finally {
    disposeProduced(produced);
  }
}
