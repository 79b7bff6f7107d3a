/** Where the test tree is: test files live one folder below it, by area. */
import { resolve } from "node:path";

/** The `test/` folder (fixtures, data and helpers sit directly inside it). */
export const testRoot = resolve(import.meta.dir, "..");
