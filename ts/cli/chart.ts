/**
 * `bun-arrow-device chart RESULT.json --out chart.svg`: time per operation
 * against size on log-log axes, ours beside the baseline, one panel per
 * suite, operation and runtime. Each series is its medians joined by a
 * line, over a band from the fastest to the slowest run (one run alone: a
 * whisker). Transfer panels, whose operations copy their bytes, also give
 * the throughput; the export/import round trip copies nothing, so it has
 * none. Each transfer panel is followed by its ratio panel: ours / raw
 * (baseline time over ours, above 1 ours is faster) against size, the
 * median over a band from the lowest to the highest ratio of one
 * repetition, with a reference line at 1. Plain SVG, no dependencies.
 * Fake-driver panels say so in their title.
 *
 * The work is linear in the number of figures: one pass groups them, one
 * sort per panel orders them, one pass per panel draws them.
 */
import type { BenchResult, Figure, Measurement } from "./bench.ts";
import { sizeLabel, timeLabel } from "./measure.ts";

const width = 760;
const panelHeight = 280;
const margin = { left: 74, right: 230, top: 34, bottom: 46 };
const colors = { ours: "#1f6feb", baseline: "#6e7781" };

const escape = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const fixed = (n: number) => n.toFixed(1);

/** Figures grouped into panels, in first-seen order, each sorted by size. */
function panels(figures: readonly Figure[]): Map<string, Figure[]> {
  const out = new Map<string, Figure[]>();
  for (const f of figures) {
    const key = `${f.suite} ${f.operation}${f.runtime ? ` on ${f.runtime}` : " (host)"}${f.fake ? " (FAKE DRIVER: not GPU figures)" : ""}`;
    let group = out.get(key);
    if (group === undefined) out.set(key, (group = []));
    group.push(f);
  }
  for (const group of out.values()) group.sort((a, b) => a.bytes - b.bytes);
  return out;
}

/** A measurement's times, ordered and at least 1 ns (a log axis has no 0). */
function spread(m: Measurement): { low: number; mid: number; high: number } {
  const mid = Math.max(1, m.medianNs);
  return { low: Math.max(1, Math.min(m.minNs, mid)), mid, high: Math.max(mid, m.maxNs) };
}

/** Time ticks on a log axis from `lo` to `hi` ns (both powers of ten):
 * 1-2-5 in each decade over at most two decades, powers of ten beyond,
 * at most nine of them. */
export function timeTicks(lo: number, hi: number): number[] {
  const decades = Math.round(Math.log10(hi / lo));
  const steps = decades <= 2 ? [1, 2, 5] : [1];
  const stride = Math.max(1, Math.ceil(decades / 8));
  const ticks: number[] = [];
  const first = Math.round(Math.log10(lo));
  for (let d = 0; d <= decades; d += stride) {
    for (const step of steps) {
      const tick = step * 10 ** (first + d);
      if (tick <= hi * 1.0001) ticks.push(tick);
    }
  }
  return ticks;
}

/** Size ticks: powers of two from 2^lo to 2^hi, every 2^stride, at most 8. */
export function sizeTicks(lo: number, hi: number): number[] {
  let stride = 1;
  while ((hi - lo) / stride > 7) stride++;
  const ticks: number[] = [];
  for (let e = lo; e <= hi; e += stride) ticks.push(2 ** e);
  return ticks;
}

function panel(title: string, figures: Figure[], top: number): string {
  const w = width - margin.left - margin.right;
  const h = panelHeight - margin.top - margin.bottom;
  const x0 = margin.left;
  const y0 = top + margin.top;

  // Domains: sizes with a margin of at least two powers of two in all,
  // times to whole powers of ten.
  let minBytes = Infinity;
  let maxBytes = -Infinity;
  let minNs = Infinity;
  let maxNs = -Infinity;
  for (const f of figures) {
    minBytes = Math.min(minBytes, f.bytes);
    maxBytes = Math.max(maxBytes, f.bytes);
    for (const m of [f.ours, f.baseline]) {
      const s = spread(m);
      minNs = Math.min(minNs, s.low);
      maxNs = Math.max(maxNs, s.high);
    }
  }
  const span = Math.log2(maxBytes) - Math.log2(minBytes);
  const pad = span < 2 ? (2 - span) / 2 + 0.25 : 0.25;
  const xLo = Math.log2(minBytes) - pad;
  const xHi = Math.log2(maxBytes) + pad;
  let yLo = Math.floor(Math.log10(minNs));
  let yHi = Math.ceil(Math.log10(maxNs));
  if (yLo === yHi) yHi++;
  const px = (bytes: number) => x0 + ((Math.log2(bytes) - xLo) / (xHi - xLo)) * w;
  const py = (ns: number) => y0 + h - ((Math.log10(ns) - yLo) / (yHi - yLo)) * h;

  const parts = [
    `<text x="${x0}" y="${top + 20}" font-size="14" font-weight="bold">${escape(title)}</text>`,
  ];
  for (const tick of timeTicks(10 ** yLo, 10 ** yHi)) {
    const y = fixed(py(tick));
    parts.push(`<line x1="${x0}" y1="${y}" x2="${x0 + w}" y2="${y}" stroke="#e4e4e4"/>`);
    parts.push(`<text x="${x0 - 6}" y="${fixed(py(tick) + 4)}" font-size="10" text-anchor="end">${timeLabel(tick)}</text>`);
  }
  for (const tick of sizeTicks(Math.ceil(xLo), Math.floor(xHi))) {
    const x = fixed(px(tick));
    parts.push(`<line x1="${x}" y1="${y0}" x2="${x}" y2="${y0 + h}" stroke="#e4e4e4"/>`);
    parts.push(`<text x="${x}" y="${y0 + h + 14}" font-size="10" text-anchor="middle">${sizeLabel(tick)}</text>`);
  }
  parts.push(`<rect x="${x0}" y="${y0}" width="${w}" height="${h}" fill="none" stroke="#444"/>`);
  parts.push(`<text x="${x0 + w / 2}" y="${y0 + h + 32}" font-size="11" text-anchor="middle">size (log scale)</text>`);
  const yTitle = `${x0 - 58} ${y0 + h / 2}`;
  parts.push(`<text x="${x0 - 58}" y="${y0 + h / 2}" font-size="11" text-anchor="middle" transform="rotate(-90 ${yTitle})">time per operation (log scale)</text>`);

  // One size alone: the two whiskers side by side rather than on top of each other.
  const series = (pick: (f: Figure) => Measurement, color: string, dash: string, shift: number) => {
    const points = figures.map((f) => ({ x: px(f.bytes) + (figures.length === 1 ? shift : 0), ...spread(pick(f)) }));
    const out: string[] = [];
    if (points.length > 1) {
      const upper = points.map((p) => `${fixed(p.x)},${fixed(py(p.high))}`);
      const lower = points.map((p) => `${fixed(p.x)},${fixed(py(p.low))}`).reverse();
      out.push(`<polygon class="band" fill="${color}" fill-opacity="0.18" stroke="none" points="${[...upper, ...lower].join(" ")}"/>`);
      out.push(`<polyline fill="none" stroke="${color}" stroke-width="2"${dash} points="${points.map((p) => `${fixed(p.x)},${fixed(py(p.mid))}`).join(" ")}"/>`);
    } else {
      for (const p of points) out.push(`<line class="band" x1="${fixed(p.x)}" y1="${fixed(py(p.high))}" x2="${fixed(p.x)}" y2="${fixed(py(p.low))}" stroke="${color}" stroke-opacity="0.5" stroke-width="6"/>`);
    }
    for (const p of points) out.push(`<circle cx="${fixed(p.x)}" cy="${fixed(py(p.mid))}" r="3" fill="${color}"/>`);
    return out;
  };
  parts.push(...series((f) => f.baseline, colors.baseline, ` stroke-dasharray="5 4"`, -5), ...series((f) => f.ours, colors.ours, "", 5));

  // Legend: the two series, what the band is, the baseline's calls, and
  // for copies the throughput at the largest size.
  const lx = x0 + w + 14;
  let ly = y0 + 8;
  const legendLine = (color: string, dash: string, label: string) => {
    parts.push(`<rect x="${lx}" y="${ly - 6}" width="22" height="12" fill="${color}" fill-opacity="0.18"/>`);
    parts.push(`<line x1="${lx}" y1="${ly}" x2="${lx + 22}" y2="${ly}" stroke="${color}" stroke-width="2"${dash}/>`);
    parts.push(`<text x="${lx + 28}" y="${ly + 4}" font-size="11">${escape(label)}</text>`);
    ly += 18;
  };
  legendLine(colors.ours, "", "bun-arrow-device");
  legendLine(colors.baseline, ` stroke-dasharray="5 4"`, "baseline");
  let fewest = Infinity;
  let most = 0;
  for (const f of figures) {
    fewest = Math.min(fewest, f.repeats);
    most = Math.max(most, f.repeats);
  }
  const runs = fewest === most ? `${most}` : `${fewest}-${most}`;
  parts.push(`<text x="${lx}" y="${ly + 2}" font-size="10" fill="#555">line: median of ${runs} runs</text>`);
  parts.push(`<text x="${lx}" y="${ly + 15}" font-size="10" fill="#555">band: fastest to slowest run</text>`);
  ly += 36;
  parts.push(`<text x="${lx}" y="${ly}" font-size="10" fill="#555">baseline:</text>`);
  // The baseline's calls, one per line ("a + b + c"), to fit the column.
  figures[0].baseline.what.split(" + ").slice(0, 5).forEach((call, i) => {
    parts.push(`<text x="${lx}" y="${ly + 13 + i * 12}" font-size="9" fill="#555">${i > 0 ? "+ " : ""}${escape(call.slice(0, 40))}</text>`);
  });
  ly += 13 + Math.min(5, figures[0].baseline.what.split(" + ").length) * 12 + 6;
  const last = figures[figures.length - 1];
  if (last.ours.gbPerSecond !== null && last.baseline.gbPerSecond !== null) {
    parts.push(`<text x="${lx}" y="${ly}" font-size="10" fill="#333">throughput at ${escape(sizeLabel(last.bytes))}:</text>`);
    parts.push(`<text x="${lx}" y="${ly + 13}" font-size="10" fill="${colors.ours}">ours ${last.ours.gbPerSecond.toFixed(2)} GB/s</text>`);
    parts.push(`<text x="${lx}" y="${ly + 26}" font-size="10" fill="${colors.baseline}">baseline ${last.baseline.gbPerSecond.toFixed(2)} GB/s</text>`);
  }
  return parts.join("\n");
}

/** Ours / raw against size (log x, linear y from 0), with its spread. */
function ratioPanel(title: string, figures: Figure[], top: number): string {
  const w = width - margin.left - margin.right;
  const h = panelHeight - margin.top - margin.bottom;
  const x0 = margin.left;
  const y0 = top + margin.top;
  let minBytes = Infinity;
  let maxBytes = -Infinity;
  let maxRatio = 1.2;
  for (const f of figures) {
    minBytes = Math.min(minBytes, f.bytes);
    maxBytes = Math.max(maxBytes, f.bytes);
    if (Number.isFinite(f.ratioMax)) maxRatio = Math.max(maxRatio, f.ratioMax, f.ratio);
  }
  const yHi = Math.ceil(maxRatio * 5) / 5;
  const span = Math.log2(maxBytes) - Math.log2(minBytes);
  const pad = span < 2 ? (2 - span) / 2 + 0.25 : 0.25;
  const xLo = Math.log2(minBytes) - pad;
  const xHi = Math.log2(maxBytes) + pad;
  const clamp = (r: number) => (Number.isFinite(r) ? Math.min(Math.max(r, 0), yHi) : yHi);
  const px = (bytes: number) => x0 + ((Math.log2(bytes) - xLo) / (xHi - xLo)) * w;
  const py = (r: number) => y0 + h - (clamp(r) / yHi) * h;
  const parts = [`<text x="${x0}" y="${top + 20}" font-size="14" font-weight="bold">${escape(title)}</text>`];
  const step = yHi <= 2 ? 0.2 : yHi <= 5 ? 0.5 : Math.ceil(yHi / 8);
  for (let tick = 0; tick <= yHi + 1e-9; tick += step) {
    const y = fixed(py(tick));
    parts.push(`<line x1="${x0}" y1="${y}" x2="${x0 + w}" y2="${y}" stroke="#e4e4e4"/>`);
    parts.push(`<text x="${x0 - 6}" y="${fixed(py(tick) + 4)}" font-size="10" text-anchor="end">${+tick.toFixed(2)}×</text>`);
  }
  for (const tick of sizeTicks(Math.ceil(xLo), Math.floor(xHi))) {
    const x = fixed(px(tick));
    parts.push(`<line x1="${x}" y1="${y0}" x2="${x}" y2="${y0 + h}" stroke="#e4e4e4"/>`);
    parts.push(`<text x="${x}" y="${y0 + h + 14}" font-size="10" text-anchor="middle">${sizeLabel(tick)}</text>`);
  }
  parts.push(`<rect x="${x0}" y="${y0}" width="${w}" height="${h}" fill="none" stroke="#444"/>`);
  parts.push(`<line class="parity" x1="${x0}" y1="${fixed(py(1))}" x2="${x0 + w}" y2="${fixed(py(1))}" stroke="#444" stroke-dasharray="2 3"/>`);
  parts.push(`<text x="${x0 + w / 2}" y="${y0 + h + 32}" font-size="11" text-anchor="middle">size (log scale)</text>`);
  const yTitle = `${x0 - 58} ${y0 + h / 2}`;
  parts.push(`<text x="${x0 - 58}" y="${y0 + h / 2}" font-size="11" text-anchor="middle" transform="rotate(-90 ${yTitle})">ours / raw (baseline time ÷ ours)</text>`);
  const points = figures.map((f) => ({ x: px(f.bytes), mid: f.ratio, low: f.ratioMin, high: f.ratioMax }));
  if (points.length > 1) {
    const upper = points.map((p) => `${fixed(p.x)},${fixed(py(p.high))}`);
    const lower = points.map((p) => `${fixed(p.x)},${fixed(py(p.low))}`).reverse();
    parts.push(`<polygon class="ratio-band" fill="${colors.ours}" fill-opacity="0.18" stroke="none" points="${[...upper, ...lower].join(" ")}"/>`);
    parts.push(`<polyline class="ratio" fill="none" stroke="${colors.ours}" stroke-width="2" points="${points.map((p) => `${fixed(p.x)},${fixed(py(p.mid))}`).join(" ")}"/>`);
  } else {
    for (const p of points) parts.push(`<line class="ratio-band" x1="${fixed(p.x)}" y1="${fixed(py(p.high))}" x2="${fixed(p.x)}" y2="${fixed(py(p.low))}" stroke="${colors.ours}" stroke-opacity="0.5" stroke-width="6"/>`);
  }
  for (const p of points) parts.push(`<circle class="ratio" cx="${fixed(p.x)}" cy="${fixed(py(p.mid))}" r="3" fill="${colors.ours}"/>`);
  const lx = x0 + w + 14;
  parts.push(`<text x="${lx}" y="${y0 + 12}" font-size="10" fill="#555">line: median ratio</text>`);
  parts.push(`<text x="${lx}" y="${y0 + 25}" font-size="10" fill="#555">band: lowest to highest</text>`);
  parts.push(`<text x="${lx}" y="${y0 + 38}" font-size="10" fill="#555">ratio of one repetition</text>`);
  parts.push(`<text x="${lx}" y="${y0 + 51}" font-size="10" fill="#555">dotted: parity (1×)</text>`);
  return parts.join("\n");
}

/** The SVG text of `result`'s figures. */
export function benchChart(result: BenchResult): string {
  const groups: [string, Figure[], "time" | "ratio"][] = [];
  for (const [title, figures] of panels(result.figures)) {
    groups.push([title, figures, "time"]);
    if (figures[0].suite === "transfer") groups.push([`${title}: ours / raw`, figures, "ratio"]);
  }
  const headerHeight = 46;
  const height = headerHeight + Math.max(1, groups.length) * panelHeight;
  const gpus = result.runtimes.filter((r) => r.available).map((r) => `${r.kind}: ${r.devices[0]?.name ?? "no device"}${r.fake ? " (fake)" : ""}, driver ${r.driverVersionText}`);
  const header = [
    `bun-arrow-device ${result.versions.package}, Bun ${result.versions.bun}, apache-arrow ${result.versions.apacheArrow}, ${result.createdAt}`,
    `${result.machine.platform}, ${result.machine.cpuModel} (${result.machine.cpuCores} cores)${gpus.length ? `; ${gpus.join("; ")}` : "; no GPU runtime"}`,
  ];
  const body = groups.length === 0
    ? [`<text x="${margin.left}" y="${headerHeight + 40}" font-size="13">no figures in this result</text>`]
    : groups.map(([title, figures, kind], i) => (kind === "time" ? panel : ratioPanel)(title, figures, headerHeight + i * panelHeight));
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    ...header.map((line, i) => `<text x="10" y="${18 + i * 16}" font-size="11" fill="#333">${escape(line)}</text>`),
    ...body,
    `</svg>`,
    "",
  ].join("\n");
}
