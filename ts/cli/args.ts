/**
 * Command-line parsing for the CLI: each command declares its boolean flags
 * and its options that take a value; anything else is a UsageError (exit
 * code 2) naming the problem.
 */

/** A wrong command line: the CLI prints the message and exits with 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

export type CommandSpec = {
  flags: readonly string[];
  values: readonly string[];
  /** How many positional arguments the command takes. */
  positionals: number;
};

export type ParsedArgs = {
  flags: Set<string>;
  values: Map<string, string>;
  positionals: string[];
};

export function parseArgs(command: string, args: readonly string[], spec: CommandSpec): ParsedArgs {
  const parsed: ParsedArgs = { flags: new Set(), values: new Map(), positionals: [] };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg.length > 1 && arg.startsWith("-") && !arg.startsWith("--")) {
      throw new UsageError(`${command}: unknown option ${arg} (options are spelled --name; see \`bun-arrow-device ${command} --help\`)`);
    }
    if (!arg.startsWith("--")) {
      if (parsed.positionals.length >= spec.positionals) throw new UsageError(`${command}: unexpected argument "${arg}"`);
      parsed.positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
    if (spec.flags.includes(name)) {
      if (eq >= 0) throw new UsageError(`${command}: --${name} takes no value`);
      parsed.flags.add(name);
    } else if (spec.values.includes(name)) {
      const value = eq >= 0 ? arg.slice(eq + 1) : args[++i];
      // "--out --json": the next option is not a value.
      if (value === undefined || value === "" || (eq < 0 && value.startsWith("--"))) throw new UsageError(`${command}: --${name} needs a value`);
      if (parsed.values.has(name)) throw new UsageError(`${command}: --${name} is given twice`);
      parsed.values.set(name, value);
    } else {
      throw new UsageError(`${command}: unknown option --${name} (see \`bun-arrow-device ${command} --help\`)`);
    }
  }
  return parsed;
}

/** The ranges of `bench`'s numeric options: each bounds the memory or the
 * time a run can take (docs/cli.md). */
export const benchLimits = {
  /** --sizes, in MiB: the host buffers and the device allocation. */
  sizesMiB: 4096,
  /** --rows: 8 bytes each, and apache-arrow's IPC copies of them. */
  rows: 100_000_000,
  /** --repeats. */
  repeats: 1000,
  /** Entries of --sizes and of --rows. */
  listLength: 32,
} as const;

/** Host memory a bench step holds at its peak, over its data's bytes: a
 * transfer holds the source, the copy back, the raw baseline's pinned
 * buffer, the pinned batch, the result of toHost and (under a fake driver)
 * the "device" buffers; an export/import round trip
 * holds the column, the array it is built from, and apache-arrow's IPC
 * bytes and the table read back from them. */
const benchMemoryFactor = { transfer: 6, exportImport: 5 } as const;

/** Why the largest --sizes or --rows would not fit in `totalBytes` of
 * memory (null when it fits): refused before anything is allocated. */
export function benchMemoryProblem(sizesMiB: readonly number[], rows: readonly number[], totalBytes: number): string | null {
  const GiB = (bytes: number) => `${(bytes / 2 ** 30).toFixed(1)} GiB`;
  const size = Math.max(0, ...sizesMiB);
  if (size * 2 ** 20 * benchMemoryFactor.transfer > totalBytes) {
    return `bench: --sizes ${size} needs about ${GiB(size * 2 ** 20 * benchMemoryFactor.transfer)} of memory; this machine has ${GiB(totalBytes)}`;
  }
  const row = Math.max(0, ...rows);
  if (row * 8 * benchMemoryFactor.exportImport > totalBytes) {
    return `bench: --rows ${row} needs about ${GiB(row * 8 * benchMemoryFactor.exportImport)} of memory; this machine has ${GiB(totalBytes)}`;
  }
  return null;
}

/** A comma-separated list of at most `maxCount` whole numbers from 1 to
 * `max` (1e6 and 1_000 style allowed), duplicates dropped. */
export function integerList(command: string, option: string, text: string, max: number, maxCount: number): number[] {
  const numbers = numberList(command, option, text);
  if (numbers.some((n) => !Number.isInteger(n))) throw new UsageError(`${command}: --${option} takes whole numbers, got "${text}"`);
  const tooLarge = numbers.find((n) => n > max);
  if (tooLarge !== undefined) throw new UsageError(`${command}: --${option} takes numbers up to ${max.toLocaleString("en-US")}, got ${tooLarge.toLocaleString("en-US")}`);
  const unique = [...new Set(numbers)];
  if (unique.length > maxCount) throw new UsageError(`${command}: --${option} takes at most ${maxCount} numbers, got ${unique.length}`);
  return unique;
}

/** A comma-separated list of positive numbers (1e6 and 1_000 style allowed). */
function numberList(command: string, option: string, text: string): number[] {
  const numbers = text.split(",").map((part) => Number(part.trim().replace(/_/g, "")));
  if (numbers.some((n) => !Number.isFinite(n) || n <= 0)) {
    throw new UsageError(`${command}: --${option} must be a comma-separated list of positive numbers, got "${text}"`);
  }
  return numbers;
}
