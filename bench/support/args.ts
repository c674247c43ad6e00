/**
 * The command line of a bench tool, one parser for all of them: `--name value` options (numbers,
 * strings, repeatable lists), `--flag` switches and positional arguments. A value is the next
 * argument whatever it starts with, so `--extra-args "--consistent-reads=proven"` passes a proxy
 * flag through (node:util `parseArgs` would take it for an option and refuse it).
 */

/** What a tool accepts: each option's default (numbers, strings), list names, flag names. */
export interface ToolArgSpec<N extends string, S extends string, L extends string, F extends string> {
  /** `--name 12`: parsed with `Number`; the default when absent. */
  numbers?: Record<N, number>;
  /** `--name text`: the default (undefined: none) when absent. */
  strings?: Record<S, string | undefined>;
  /** `--name a --name b`: every value, in order ([] when absent). */
  lists?: readonly L[];
  /** `--name`: true when present. */
  flags?: readonly F[];
}

/** The parsed command line: one property per option, typed by the spec, and the positionals. */
export type ToolArgs<N extends string, S extends string, L extends string, F extends string> = {
  [k in N]: number;
} & { [k in S]: string | undefined } & { [k in L]: string[] } & { [k in F]: boolean } & {
  positionals: string[];
};

/**
 * Parses `argv` (default `process.argv.slice(2)`) by `spec`.
 * @throws Error naming the option: an unknown `--option`, one without its value, or a number
 *   option whose value is not a finite number.
 */
export function toolArgs<
  N extends string = never,
  S extends string = never,
  L extends string = never,
  F extends string = never,
>(spec: ToolArgSpec<N, S, L, F>, argv: readonly string[] = process.argv.slice(2)): ToolArgs<N, S, L, F> {
  const numbers: Record<string, number> = spec.numbers ?? {};
  const strings: Record<string, string | undefined> = spec.strings ?? {};
  const lists = new Set<string>(spec.lists ?? []);
  const flags = new Set<string>(spec.flags ?? []);
  const out: Record<string, unknown> = { ...numbers, ...strings, positionals: [] as string[] };
  for (const l of lists) out[l] = [];
  for (const f of flags) out[f] = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) {
      (out.positionals as string[]).push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = a.slice(2, eq < 0 ? undefined : eq);
    if (flags.has(name) && eq < 0) {
      out[name] = true;
      continue;
    }
    if (!(name in numbers) && !(name in strings) && !lists.has(name))
      throw new Error(`unknown option --${name}`);
    const value = eq >= 0 ? a.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new Error(`--${name} needs a value`);
    if (name in numbers) {
      const n = Number(value);
      if (value.trim() === '' || !Number.isFinite(n)) throw new Error(`--${name} ${value}: not a number`);
      out[name] = n;
    } else if (lists.has(name)) (out[name] as string[]).push(value);
    else out[name] = value;
  }
  return out as ToolArgs<N, S, L, F>;
}

/** Space-separated words of every value of a list option (`--extra-args "--a=1 --b"` twice → all of them). */
export function words(values: readonly string[]): string[] {
  return values.flatMap((v) => v.split(' ').filter(Boolean));
}
