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
      if (value === undefined || value === "") throw new UsageError(`${command}: --${name} needs a value`);
      parsed.values.set(name, value);
    } else {
      throw new UsageError(`${command}: unknown option --${name} (see \`bun-arrow-device ${command} --help\`)`);
    }
  }
  return parsed;
}

/** A comma-separated list of positive numbers (1e6 and 1_000 style allowed). */
export function numberList(command: string, option: string, text: string): number[] {
  const numbers = text.split(",").map((part) => Number(part.trim().replace(/_/g, "")));
  if (numbers.some((n) => !Number.isFinite(n) || n <= 0)) {
    throw new UsageError(`${command}: --${option} must be a comma-separated list of positive numbers, got "${text}"`);
  }
  return numbers;
}
