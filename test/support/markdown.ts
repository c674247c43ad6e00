/**
 * Just enough Markdown reading for the documentation tests: table cells, headings with their
 * GitHub anchors, and links, all outside fenced code blocks.
 */

/** The text with fenced code blocks (```…```) blanked out, line count kept. */
export function withoutCodeBlocks(md: string): string {
  let fenced = false;
  return md
    .split('\n')
    .map((line) => {
      if (/^\s*```/.test(line)) {
        fenced = !fenced;
        return '';
      }
      return fenced ? '' : line;
    })
    .join('\n');
}

/**
 * The rows of every table in `md` as trimmed cells, separator rows (`|---|`) left out. Padding
 * does not matter: Biome pads the columns of the documents, generators (e.g. `renderReference()`)
 * do not, and both mean the same table. An escaped `\|` stays inside its cell.
 */
export function tableRows(md: string): string[][] {
  return withoutCodeBlocks(md)
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('|') && l.endsWith('|'))
    .map((l) =>
      l
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((c) => c.trim()),
    )
    .filter((cells) => !cells.every((c) => /^:?-+:?$/.test(c)));
}

/**
 * GitHub's anchor of a heading: lower case, everything but letters, digits, spaces, `-` and `_`
 * dropped (inline code backticks included), spaces turned into `-`.
 */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of every heading of `md`; a repeated heading gets `-1`, `-2`, … as on GitHub. */
export function anchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of withoutCodeBlocks(md).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The headings of `md` (text after the `#`s), in order. */
export function headings(md: string): string[] {
  return [...withoutCodeBlocks(md).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)].map((m) => m[1]!);
}

/** One link: its target as written and the 1-based line it is on. */
export interface MarkdownLink {
  target: string;
  line: number;
}

/** Every inline link and image (`[text](target)`, `![alt](target)`) outside code. */
export function links(md: string): MarkdownLink[] {
  const out: MarkdownLink[] = [];
  withoutCodeBlocks(md)
    .split('\n')
    .forEach((text, i) => {
      // Inline code may hold brackets and parentheses that are not links.
      const line = text.replace(/`[^`]*`/g, '``');
      for (const m of line.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
        out.push({ target: m[1]!, line: i + 1 });
      }
    });
  return out;
}
