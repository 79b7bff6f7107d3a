/**
 * A module with one of each problem `publicApiProblems` reports, and
 * exports it must accept (test/structure/public_api.test.ts checks both).
 */

type HiddenOptions = { verbose?: boolean };

export function undocumented(): number {
  return 1;
}

/** Documented, but its return type is inferred. */
export function inferred() {
  return 1;
}

/** Takes an inline option object. */
export function inlineOptions(options: { verbose?: boolean } = {}): boolean {
  return options.verbose ?? false;
}

/** Takes an option type that is not exported. */
export function hiddenOptions(options: HiddenOptions = {}): boolean {
  return options.verbose ?? false;
}

/** A class with one undocumented member. */
export class Sample {
  get undocumentedGetter(): number {
    return 1;
  }

  /** Documented and typed. */
  get fine(): number {
    return 2;
  }

  /** @internal not public: needs neither. */
  internalHelper() {
    return 3;
  }
}

/** Options named and exported, as they should be. */
export type FineOptions = { verbose?: boolean };

/** Everything explicit. */
export function fine(options: FineOptions = {}): boolean {
  return options.verbose ?? false;
}

/** A literal constant needs no annotation. */
export const literal = 4;
