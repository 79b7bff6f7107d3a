/**
 * Progress of a long CLI run, always on stderr (stdout is for results).
 * On a terminal: a progress bar, drawn once the run has taken more than
 * `barAfterMs` and redrawn in place. Elsewhere (a pipe, a CI log): one line
 * per step. `quiet` prints nothing.
 */
export type ProgressOptions = {
  total: number;
  quiet?: boolean;
  /** Default: whether stderr is a terminal. */
  tty?: boolean;
  barAfterMs?: number;
  write?: (text: string) => void;
};

export class Progress {
  readonly #total: number;
  readonly #quiet: boolean;
  readonly #tty: boolean;
  readonly #barAfterMs: number;
  readonly #write: (text: string) => void;
  readonly #started = performance.now();
  #done = 0;
  #drawn = false;

  constructor(options: ProgressOptions) {
    this.#total = Math.max(1, options.total);
    this.#quiet = options.quiet ?? false;
    this.#tty = options.tty ?? process.stderr.isTTY === true;
    this.#barAfterMs = options.barAfterMs ?? 2000;
    this.#write = options.write ?? ((text) => process.stderr.write(text));
  }

  /** A step begins: `label` says what it measures. */
  step(label: string): void {
    if (this.#quiet) return;
    if (!this.#tty) {
      this.#write(`[${this.#done + 1}/${this.#total}] ${label}\n`);
    } else if (this.#drawn || performance.now() - this.#started > this.#barAfterMs) {
      this.#draw(label);
    }
    this.#done = Math.min(this.#total, this.#done + 1);
  }

  /** A message between steps (a warning, a skipped runtime). */
  note(text: string): void {
    if (this.#quiet) return;
    if (this.#drawn) this.#write("\r\x1b[2K");
    this.#write(`${text}\n`);
    this.#drawn = false;
  }

  /** Clears the bar at the end. */
  finish(): void {
    if (this.#drawn) this.#write("\r\x1b[2K");
    this.#drawn = false;
  }

  #draw(label: string): void {
    const width = 30;
    const filled = Math.round((this.#done / this.#total) * width);
    const bar = `${"#".repeat(filled)}${".".repeat(width - filled)}`;
    this.#write(`\r\x1b[2K[${bar}] ${this.#done}/${this.#total} ${label}`);
    this.#drawn = true;
  }
}
