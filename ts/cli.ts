#!/usr/bin/env bun
/** The `bun-arrow-device` command (package.json "bin"); its commands are
 * in cli/main.ts. */
import { main } from "./cli/main.ts";

if (import.meta.main) process.exit(await main(process.argv.slice(2)));

export { main };
