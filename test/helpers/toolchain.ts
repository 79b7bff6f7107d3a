/**
 * The project's pinned Zig (scripts/toolchain.env), as scripts/env.sh
 * finds it, for tests that run a build themselves.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dir, "..", "..");
const zigVersion = /^ZIG_VERSION=(.+)$/m.exec(readFileSync(join(root, "scripts", "toolchain.env"), "utf8"))![1]!.trim();

/** The zig binary of .toolchain/zig-<version>/. */
export const ZIG = join(root, ".toolchain", `zig-${zigVersion}`, "ziglang", "zig");
