/**
 * `bun-arrow-device chart RESULT.json --out chart.svg`: throughput against
 * size, ours against the baseline, one panel per suite, operation and
 * runtime. Plain SVG, no dependencies. Fake-driver panels say so in their
 * title.
 */
import type { BenchResult, Figure } from "./bench.ts";
import { sizeLabel } from "./measure.ts";

const panelWidth = 640;
const panelHeight = 240;
const margin = { left: 64, right: 170, top: 34, bottom: 42 };

const escape = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** Figures grouped into panels, in first-seen order. */
function panels(figures: Figure[]): Map<string, Figure[]> {
  const out = new Map<string, Figure[]>();
  for (const f of figures) {
    const key = `${f.suite} ${f.operation}${f.runtime ? ` on ${f.runtime}` : " (host)"}${f.fake ? " (FAKE DRIVER: not GPU figures)" : ""}`;
    out.set(key, [...(out.get(key) ?? []), f].sort((a, b) => a.bytes - b.bytes));
  }
  return out;
}

function panel(title: string, figures: Figure[], top: number): string {
  const w = panelWidth - margin.left - margin.right;
  const h = panelHeight - margin.top - margin.bottom;
  const x0 = margin.left;
  const y0 = top + margin.top;
  const logs = figures.map((f) => Math.log2(f.bytes));
  const minX = Math.min(...logs);
  const spanX = Math.max(...logs) - minX || 1;
  const maxY = Math.max(...figures.flatMap((f) => [f.ours.value, f.baseline.value]), 1e-9) * 1.1;
  const px = (f: Figure) => x0 + (figures.length === 1 ? w / 2 : ((Math.log2(f.bytes) - minX) / spanX) * w);
  const py = (v: number) => y0 + h - (v / maxY) * h;
  const series = (pick: (f: Figure) => number, color: string, dash: string) => [
    `<polyline fill="none" stroke="${color}" stroke-width="2"${dash} points="${figures.map((f) => `${px(f).toFixed(1)},${py(pick(f)).toFixed(1)}`).join(" ")}"/>`,
    ...figures.map((f) => `<circle cx="${px(f).toFixed(1)}" cy="${py(pick(f)).toFixed(1)}" r="3" fill="${color}"/>`),
  ];
  const parts = [
    `<text x="${x0}" y="${top + 20}" font-size="14" font-weight="bold">${escape(title)}</text>`,
    `<line x1="${x0}" y1="${y0 + h}" x2="${x0 + w}" y2="${y0 + h}" stroke="#444"/>`,
    `<line x1="${x0}" y1="${y0}" x2="${x0}" y2="${y0 + h}" stroke="#444"/>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const v = (maxY / 4) * i;
    parts.push(`<text x="${x0 - 6}" y="${py(v) + 4}" font-size="10" text-anchor="end">${v.toFixed(v >= 10 ? 0 : 2)}</text>`);
    if (i > 0) parts.push(`<line x1="${x0}" y1="${py(v)}" x2="${x0 + w}" y2="${py(v)}" stroke="#ddd"/>`);
  }
  for (const f of figures) parts.push(`<text x="${px(f)}" y="${y0 + h + 14}" font-size="10" text-anchor="middle">${sizeLabel(f.bytes)}</text>`);
  parts.push(`<text x="${x0 + w / 2}" y="${y0 + h + 32}" font-size="11" text-anchor="middle">size (log scale)</text>`);
  parts.push(`<text x="${x0 - 46}" y="${y0 + h / 2}" font-size="11" text-anchor="middle" transform="rotate(-90 ${x0 - 46} ${y0 + h / 2})">GB/s</text>`);
  parts.push(...series((f) => f.baseline.value, "#888", ` stroke-dasharray="5 4"`), ...series((f) => f.ours.value, "#1f6feb", ""));
  const legendX = x0 + w + 14;
  parts.push(`<line x1="${legendX}" y1="${y0 + 8}" x2="${legendX + 22}" y2="${y0 + 8}" stroke="#1f6feb" stroke-width="2"/>`);
  parts.push(`<text x="${legendX + 28}" y="${y0 + 12}" font-size="11">bun-arrow-device</text>`);
  parts.push(`<line x1="${legendX}" y1="${y0 + 28}" x2="${legendX + 22}" y2="${y0 + 28}" stroke="#888" stroke-width="2" stroke-dasharray="5 4"/>`);
  parts.push(`<text x="${legendX + 28}" y="${y0 + 32}" font-size="11">baseline</text>`);
  // The baseline's calls, one per line ("a + b + c"), to fit the legend column.
  figures[0].baseline.what.split(" + ").slice(0, 6).forEach((call, i) => {
    parts.push(`<text x="${legendX}" y="${y0 + 50 + i * 12}" font-size="9" fill="#555">${i > 0 ? "+ " : ""}${escape(call.slice(0, 30))}</text>`);
  });
  return parts.join("\n");
}

/** The SVG text of `result`'s figures. */
export function benchChart(result: BenchResult): string {
  const groups = [...panels(result.figures)];
  const headerHeight = 46;
  const height = headerHeight + Math.max(1, groups.length) * panelHeight;
  const gpus = result.runtimes.filter((r) => r.available).map((r) => `${r.kind}: ${r.devices[0]?.name ?? "no device"}${r.fake ? " (fake)" : ""}, driver ${r.driverVersionText}`);
  const header = [
    `bun-arrow-device ${result.versions.package}, Bun ${result.versions.bun}, apache-arrow ${result.versions.apacheArrow}, ${result.createdAt}`,
    `${result.machine.platform}, ${result.machine.cpuModel} (${result.machine.cpuCores} cores)${gpus.length ? `; ${gpus.join("; ")}` : "; no GPU runtime"}`,
  ];
  const body = groups.length === 0
    ? [`<text x="${margin.left}" y="${headerHeight + 40}" font-size="13">no figures in this result</text>`]
    : groups.map(([title, figures], i) => panel(title, figures, headerHeight + i * panelHeight));
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${panelWidth}" height="${height}" viewBox="0 0 ${panelWidth} ${height}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    ...header.map((line, i) => `<text x="10" y="${18 + i * 16}" font-size="11" fill="#333">${escape(line)}</text>`),
    ...body,
    `</svg>`,
    "",
  ].join("\n");
}
