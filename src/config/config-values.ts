/**
 * Conversion of one raw setting (flag, environment variable or YAML value) to its typed value,
 * by the setting's kind (`OPTIONS` of `config.ts`), and the `auto` entry of `--resources`.
 * Every failure is a {@link ConfigError} whose one-line message names where the value came from.
 */

import type { ResourceSpec } from '../apimachinery/resource-scope.ts';
import { parseResourceList, ResourceSpecError } from '../apimachinery/resource-scope.ts';
import { ConfigError } from '../util/errors.ts';
import { GO_BOOL, parseGoDuration } from './go-values.ts';
import { type ListenAddress, parseListenAddress } from './listen-address.ts';

/** `resource[.group]` (DNS-1123 labels joined by dots). */
const RESOURCE_NAME_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * Takes the entry `auto` out of the parsed `--resources` list: `config.auto` says whether it was
 * there. A scoped `auto[…]` is an error (an on-demand cache caches what its first client asks for).
 * @throws ConfigError naming where `--resources` came from.
 */
export function takeAuto(config: { resources: ResourceSpec[]; auto: boolean }, where: string): void {
  const auto = config.resources.find((r) => r.name === 'auto');
  if (auto && (auto.fieldSelector !== undefined || auto.labelSelector !== undefined))
    throw new ConfigError(`${where}: "auto" takes no scope`);
  config.auto = auto !== undefined;
  config.resources = config.resources.filter((r) => r.name !== 'auto');
}

function parseAddress(where: string, v: string): ListenAddress {
  try {
    return parseListenAddress(v);
  } catch {
    throw new ConfigError(`${where}: invalid address ${JSON.stringify(v)} (want HOST:PORT)`);
  }
}

/** The part of a setting's spec (`OptionSpec` of `config.ts`) that conversion reads. */
export interface ValueSpec {
  /** `int`: a positive integer; `count`: 0 or a positive integer (decimal digits, or a YAML number). */
  kind:
    | 'string'
    | 'resources'
    | 'names'
    | 'address'
    | 'enum'
    | 'int'
    | 'count'
    | 'bool'
    | 'duration'
    | 'regexps';
  /** The allowed values of an `enum`. */
  values?: readonly string[];
  /** A `duration`'s smallest allowed value, as a Go duration (`1s`). */
  atLeast?: string;
}

/**
 * `raw` (from `where`: a flag, variable or file key) as the typed value of `spec`; `env` expands
 * `$(VAR)` in `--resources`.
 * @throws ConfigError naming `where`.
 */
export function convert(
  spec: ValueSpec,
  where: string,
  raw: unknown,
  env: Readonly<Record<string, string | undefined>> = {},
): unknown {
  switch (spec.kind) {
    case 'string':
      if (typeof raw !== 'string' || raw === '') throw new ConfigError(`${where}: want a non-empty string`);
      return raw;
    case 'resources':
      try {
        return parseResourceList(raw, env);
      } catch (err) {
        throw err instanceof ResourceSpecError ? new ConfigError(`${where}: ${err.message}`) : err;
      }
    case 'names': {
      const items = Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.split(',') : undefined;
      if (!items || items.some((i) => typeof i !== 'string'))
        throw new ConfigError(`${where}: want comma-separated resource[.group] names`);
      const out = (items as string[]).map((s) => s.trim().toLowerCase()).filter((s) => s !== '');
      for (const n of out) {
        if (!RESOURCE_NAME_RE.test(n))
          throw new ConfigError(`${where}: invalid resource ${JSON.stringify(n)} (want resource[.group])`);
      }
      return out;
    }
    case 'address':
      if (typeof raw !== 'string') throw new ConfigError(`${where}: want HOST:PORT`);
      return parseAddress(where, raw);
    case 'enum':
      if (typeof raw !== 'string' || !spec.values!.includes(raw)) {
        throw new ConfigError(
          `${where}: invalid value ${JSON.stringify(raw)} (want one of ${spec.values!.join(', ')})`,
        );
      }
      return raw;
    case 'bool':
      if (typeof raw === 'boolean') return raw;
      if (typeof raw === 'string' && Object.hasOwn(GO_BOOL, raw)) return GO_BOOL[raw];
      throw new ConfigError(`${where}: invalid value ${JSON.stringify(raw)} (want true or false)`);
    case 'duration': {
      const ms = typeof raw === 'string' ? parseGoDuration(raw) : undefined;
      if (ms === undefined)
        throw new ConfigError(`${where}: invalid duration ${JSON.stringify(raw)} (want e.g. 10s, 1m30s)`);
      if (spec.atLeast !== undefined && ms < parseGoDuration(spec.atLeast)!)
        throw new ConfigError(`${where}: want at least ${spec.atLeast}, got ${raw}`);
      return ms;
    }
    case 'regexps': {
      const items = Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.split(',') : undefined;
      if (!items || items.some((i) => typeof i !== 'string'))
        throw new ConfigError(`${where}: want comma-separated regular expressions`);
      const out = (items as string[]).map((s) => s.trim()).filter((s) => s !== '');
      for (const r of out) {
        try {
          new RegExp(r);
        } catch (err) {
          throw new ConfigError(
            `${where}: invalid regular expression ${JSON.stringify(r)}: ${(err as Error).message}`,
          );
        }
      }
      return out;
    }
    case 'int':
    case 'count': {
      const n =
        typeof raw === 'number'
          ? raw
          : typeof raw === 'string' && /^[0-9]+$/.test(raw)
            ? Number(raw)
            : Number.NaN;
      const least = spec.kind === 'count' ? 0 : 1;
      if (!Number.isSafeInteger(n) || n < least)
        throw new ConfigError(
          `${where}: invalid value ${JSON.stringify(raw)} (want ${least === 0 ? '0 or ' : ''}a positive integer)`,
        );
      return n;
    }
  }
}
