/**
 * The command line every driver here shares: `bun DRIVER MODE N` runs
 * MODE's block of `per` iterations until `warmup` iterations, then until
 * N more (count.sh takes the difference of two N). Throws on an unknown
 * mode, naming the known ones.
 */
export function drive(modes: Record<string, () => void>, per: number, warmup: number): void {
  const mode = process.argv[2];
  const iterations = Number(process.argv[3]);
  const block = modes[mode];
  if (block === undefined) throw new Error(`mode must be one of ${Object.keys(modes).join(", ")}`);
  if (!Number.isInteger(iterations) || iterations < 0) throw new Error(`N must be a whole number of iterations, not ${process.argv[3]}`);
  const run = (n: number) => { for (let i = 0; i < n / per; i++) block(); };
  run(warmup);
  run(iterations);
}
