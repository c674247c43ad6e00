/**
 * Markdown building blocks shared by the renderers of bench/report/ (report.ts,
 * node-local-report.ts, on-demand-report.ts): number formatting and tables padded the way Biome
 * formats them, so the generated blocks of docs/benchmarks.md stay `biome check`-clean.
 */

/** `x` rounded to `d` decimals with thousands separators (en-US); `–` when not finite. */
export const fmt = (x: number, d = 1) =>
  Number.isFinite(x) ? (Math.round(x * 10 ** d) / 10 ** d).toLocaleString('en-US') : '–';

/** A Markdown table padded the way Biome formats one (no newline after the last row). */
export function table(header: string[], rows: Array<Array<string | number>>): string {
  const cells = [header, ...rows.map((r) => r.map(String))];
  const w = header.map((_, i) => Math.max(3, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(w[i]!)).join(' | ')} |`;
  return [line(header), line(w.map((n) => '-'.repeat(n))), ...rows.map((r) => line(r.map(String)))].join(
    '\n',
  );
}
