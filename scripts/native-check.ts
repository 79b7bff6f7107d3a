/**
 * Checks the release libraries in dist/native/<platform-id>/ (or any
 * folder laid out the same way):
 * - each file is the right format and CPU for its platform id (ELF
 *   x86-64/AArch64, Mach-O x86-64/arm64);
 * - its exported functions are exactly the abd_* functions that
 *   lib/include/arrow_device.h declares (ELF: .dynsym, kept when stripped;
 *   Mach-O: the external defined symbols of LC_SYMTAB).
 * The formats are read here, in a few lines each, because neither binutils
 * (no Mach-O) nor `zig objdump` (COFF only) reads all of them.
 *
 *   bun scripts/native-check.ts [dist/native]    prints one line per
 *   platform and exits non-zero on any problem
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

export type Platform = { id: string; file: string; format: "elf" | "macho"; machine: "x64" | "arm64" };

/** Every platform id of the release (docs/building.md), with its file. */
export const platforms: Platform[] = [
  { id: "linux-x64-gnu", file: "libarrow_device.so", format: "elf", machine: "x64" },
  { id: "linux-x64-musl", file: "libarrow_device.so", format: "elf", machine: "x64" },
  { id: "linux-arm64-gnu", file: "libarrow_device.so", format: "elf", machine: "arm64" },
  { id: "linux-arm64-musl", file: "libarrow_device.so", format: "elf", machine: "arm64" },
  { id: "darwin-x64", file: "libarrow_device.dylib", format: "macho", machine: "x64" },
  { id: "darwin-arm64", file: "libarrow_device.dylib", format: "macho", machine: "arm64" },
];

const repoRoot = resolve(import.meta.dir, "..");

/** The abd_* functions lib/include/arrow_device.h declares, sorted. */
export function headerFunctions(header = join(repoRoot, "lib", "include", "arrow_device.h")): string[] {
  const names = new Set<string>();
  for (const match of readFileSync(header, "utf8").matchAll(/\b(abd_[a-z0-9_]+)\s*\(/g)) names.add(match[1]!);
  return [...names].sort();
}

export type Exports = { format: "elf" | "macho" | "unknown"; machine: string; functions: string[] };

function cString(bytes: Uint8Array, at: number): string {
  let end = at;
  while (end < bytes.length && bytes[end] !== 0) end++;
  return new TextDecoder().decode(bytes.subarray(at, end));
}

/** ELF64 little-endian: the defined global/weak functions of .dynsym. */
function elfExports(bytes: Uint8Array): Exports {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const machineCode = view.getUint16(18, true);
  const machine = machineCode === 62 ? "x64" : machineCode === 183 ? "arm64" : `e_machine ${machineCode}`;
  const sectionsAt = Number(view.getBigUint64(40, true));
  const sectionSize = view.getUint16(58, true);
  const sectionCount = view.getUint16(60, true);
  const section = (i: number) => {
    const at = sectionsAt + i * sectionSize;
    return { type: view.getUint32(at + 4, true), offset: Number(view.getBigUint64(at + 24, true)), size: Number(view.getBigUint64(at + 32, true)), link: view.getUint32(at + 40, true) };
  };
  const functions: string[] = [];
  for (let i = 0; i < sectionCount; i++) {
    const dynsym = section(i);
    if (dynsym.type !== 11) continue; // SHT_DYNSYM
    const strings = section(dynsym.link).offset;
    for (let at = dynsym.offset; at < dynsym.offset + dynsym.size; at += 24) {
      const info = bytes[at + 4]!;
      const sectionIndex = view.getUint16(at + 6, true);
      const bind = info >> 4;
      const type = info & 0xf;
      if (sectionIndex !== 0 && (bind === 1 || bind === 2) && type === 2) functions.push(cString(bytes, strings + view.getUint32(at, true)));
    }
  }
  return { format: "elf", machine, functions: functions.sort() };
}

/** Mach-O 64-bit: the external symbols defined in a section (LC_SYMTAB). */
function machoExports(bytes: Uint8Array): Exports {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const cpu = view.getUint32(4, true);
  const machine = cpu === 0x01000007 ? "x64" : cpu === 0x0100000c ? "arm64" : `cputype ${cpu}`;
  const commandCount = view.getUint32(16, true);
  const functions: string[] = [];
  let at = 32;
  for (let i = 0; i < commandCount; i++) {
    const command = view.getUint32(at, true);
    if (command === 2) { // LC_SYMTAB
      const symbolsAt = view.getUint32(at + 8, true);
      const symbolCount = view.getUint32(at + 12, true);
      const strings = view.getUint32(at + 16, true);
      for (let s = 0; s < symbolCount; s++) {
        const entry = symbolsAt + s * 16;
        const type = bytes[entry + 4]!;
        const external = (type & 0x01) !== 0;
        const definedInSection = (type & 0x0e) === 0x0e;
        const debug = (type & 0xe0) !== 0;
        if (external && definedInSection && !debug) functions.push(cString(bytes, strings + view.getUint32(entry, true)).replace(/^_/, ""));
      }
    }
    at += view.getUint32(at + 4, true);
  }
  return { format: "macho", machine, functions: functions.sort() };
}

/** The exported functions of a shared library file. */
export function exportsOf(path: string): Exports {
  const bytes = new Uint8Array(readFileSync(path));
  const magic = new DataView(bytes.buffer).getUint32(0, false);
  if (magic === 0x7f454c46 && bytes[4] === 2 && bytes[5] === 1) return elfExports(bytes);
  if (magic === 0xcffaedfe) return machoExports(bytes);
  return { format: "unknown", machine: "unknown", functions: [] };
}

/** Every problem with one platform's library ([] when it is right). */
export function checkPlatform(dir: string, platform: Platform, expected = headerFunctions()): string[] {
  const path = join(dir, platform.id, platform.file);
  if (!existsSync(path)) return [`${platform.id}: no ${path}`];
  const found = exportsOf(path);
  const problems: string[] = [];
  if (found.format !== platform.format) problems.push(`${platform.id}: ${path} is ${found.format}, not ${platform.format}`);
  if (found.machine !== platform.machine) problems.push(`${platform.id}: ${path} is for ${found.machine}, not ${platform.machine}`);
  const exported = found.functions.filter((name) => name.startsWith("abd_"));
  const missing = expected.filter((name) => !exported.includes(name));
  const extra = exported.filter((name) => !expected.includes(name));
  if (missing.length > 0) problems.push(`${platform.id}: missing ${missing.join(", ")}`);
  if (extra.length > 0) problems.push(`${platform.id}: exports functions the header does not declare: ${extra.join(", ")}`);
  return problems;
}

if (import.meta.main) {
  const dir = resolve(process.argv[2] ?? join(repoRoot, "dist", "native"));
  const expected = headerFunctions();
  let failed = false;
  for (const platform of platforms) {
    const problems = checkPlatform(dir, platform, expected);
    failed ||= problems.length > 0;
    console.log(problems.length === 0 ? `${platform.id}: ${platform.format} ${platform.machine}, ${expected.length} abd_* functions as in the header` : problems.join("\n"));
  }
  process.exit(failed ? 1 : 0);
}
