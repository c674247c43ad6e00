/**
 * The one configuration schema of kube-cache-proxy. Every setting is declared once in
 * {@link OPTIONS} (`config-schema.ts`) with its flag, environment variable, YAML key, default and description;
 * command-line flags, `KCP_*` environment variables and the optional YAML file (`--config`)
 * all map onto it (precedence: flag > environment > file > default), and the reference table of
 * docs/configuration.md is generated from the same table ({@link renderReference}).
 */
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import type { ResourceSpec } from '../apimachinery/resource-scope.ts';
import { ConfigError } from '../util/errors.ts';
import { type Config, type Kind, OPTIONS, type OptionSpec } from './config-schema.ts';
import { convert, takeAuto } from './config-values.ts';
import { rejectPathsDefault } from './kubectl-proxy-filter.ts';
import type { ListenAddress } from './listen-address.ts';
import { checkListenMode, FILE_KEYS } from './listen-mode.ts';

export type { ListenAddress, ResourceSpec };

export { type Config, type Kind, OPTIONS, type OptionSpec };

/** Flags that are not settings. */
const META_FLAGS = { config: 'KCP_CONFIG', help: '', version: '' } as const;

/** What {@link loadConfig} returns: a config, or a request for help/version output. */
export type LoadResult = { kind: 'config'; config: Config } | { kind: 'help' } | { kind: 'version' };

/** Inputs of {@link loadConfig}; injectable for tests. */
export interface LoadInputs {
  argv: string[];
  env: Record<string, string | undefined>;
  readFile?: (path: string) => string;
  /** Whether a file exists (checks `--kubeconfig`); default `fs.existsSync`. */
  exists?: (path: string) => boolean;
}

/**
 * Builds the config from flags, environment and the optional YAML file.
 * @throws ConfigError with a one-line message naming the offending flag, variable or key.
 */
export function loadConfig(inputs: LoadInputs): LoadResult {
  const readFile = inputs.readFile ?? ((p: string) => readFileSync(p, 'utf8'));
  const parseOptions: Record<string, { type: 'string' | 'boolean'; short?: string }> = {
    config: { type: 'string' },
  };
  for (const f of ['help', 'version']) parseOptions[f] = { type: 'boolean' };
  // -h as every Kubernetes component (cobra) and Go's flag package accept it.
  parseOptions.help = { type: 'boolean', short: 'h' };
  for (const o of OPTIONS) parseOptions[o.flag] = { type: o.kind === 'bool' ? 'boolean' : 'string' };
  let flags: Record<string, string | boolean | undefined>;
  try {
    const parsed = parseArgs({ args: inputs.argv, options: parseOptions, strict: true });
    flags = parsed.values as Record<string, string | boolean | undefined>;
  } catch (err) {
    throw new ConfigError(oneLine((err as Error).message));
  }
  if (flags.help) return { kind: 'help' };
  if (flags.version) return { kind: 'version' };

  let file: Record<string, unknown> = {};
  const configPath = (flags.config as string | undefined) ?? inputs.env[META_FLAGS.config];
  if (configPath !== undefined) {
    const where =
      flags.config !== undefined ? `--config ${configPath}` : `${META_FLAGS.config}=${configPath}`;
    let text: string;
    try {
      text = readFile(configPath);
    } catch (err) {
      throw new ConfigError(
        `${where}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
    let doc: unknown;
    try {
      doc = parseYaml(text);
    } catch (err) {
      throw new ConfigError(`${where}: invalid YAML: ${oneLine((err as Error).message)}`);
    }
    if (doc !== null && doc !== undefined) {
      if (typeof doc !== 'object' || Array.isArray(doc))
        throw new ConfigError(`${where}: want a YAML mapping`);
      file = doc as Record<string, unknown>;
      const known = new Set<string>(OPTIONS.map((o) => o.key));
      for (const k of Object.keys(file)) {
        if (!known.has(k)) throw new ConfigError(`${where}: unknown key ${JSON.stringify(k)}`);
      }
    }
  }

  const out: Record<string, unknown> = {};
  const whereOf: Partial<Record<keyof Config, string>> = {};
  for (const o of OPTIONS) {
    let where: string;
    let raw: unknown;
    if (flags[o.flag] !== undefined) {
      where = `--${o.flag}`;
      raw = flags[o.flag];
    } else if (inputs.env[o.env] !== undefined) {
      where = o.env;
      raw = inputs.env[o.env];
    } else if (file[o.key] !== undefined) {
      where = `${configPath}: ${o.key}`;
      raw = file[o.key];
    } else {
      if (o.default !== undefined) out[o.key] = convert(o, `default of --${o.flag}`, o.default);
      continue;
    }
    out[o.key] = convert(o, where, raw, inputs.env);
    whereOf[o.key] = where;
    if (FILE_KEYS.has(o.key) && !(inputs.exists ?? existsSync)(out[o.key] as string)) {
      throw new ConfigError(`${where}: no such file ${JSON.stringify(out[o.key])}`);
    }
  }
  const config = out as unknown as Config;
  if (whereOf.rejectPaths === undefined) config.rejectPaths = rejectPathsDefault(config.delegatedAuth);
  takeAuto(config, whereOf.resources ?? '--resources');
  const podIP = inputs.env.POD_IP;
  let hostWhere = '--host-network';
  if (!config.hostNetwork && podIP !== undefined && podIP !== '' && podIP === inputs.env.HOST_IP) {
    config.hostNetwork = true;
    hostWhere = `POD_IP=HOST_IP=${podIP} (hostNetwork)`;
  }
  checkListenMode(config, hostWhere);
  // The outage policy extends delegated decisions only; without them it would silently do nothing.
  if (config.authorizationOutageGrace > 0 && !config.delegatedAuth)
    throw new ConfigError(`${whereOf.authorizationOutageGrace} requires --delegated-auth`);
  return { kind: 'config', config };
}

function oneLine(s: string): string {
  return s.replace(/\s*\n\s*/g, ' ').trim();
}

/** The `--help` text, generated from {@link OPTIONS}. */
export function renderHelp(): string {
  const lines = [
    'Usage: kube-cache-proxy [flags]',
    '',
    'Flags (each also settable by environment variable or YAML key):',
  ];
  for (const o of OPTIONS) {
    const def = o.default === undefined ? '' : ` (default ${JSON.stringify(o.default)})`;
    lines.push(
      `  --${o.flag}${o.kind === 'bool' ? '' : ` ${o.kind === 'enum' ? o.values!.join('|') : o.kind.toUpperCase()}`}   [${o.env}, ${o.key}]${def}`,
    );
    lines.push(`      ${o.description}`);
  }
  lines.push('  --config FILE   [KCP_CONFIG]', '      YAML file with any of the keys above.');
  lines.push('  --version', '      Print the version and the git revision it was built from, and exit.');
  lines.push('  -h, --help', '      Print this help and exit.');
  return `${lines.join('\n')}\n`;
}

/** A Markdown reference table of every setting (the generated block of docs/configuration.md). */
export function renderReference(): string {
  const rows = OPTIONS.map((o) => {
    const def = o.default === undefined ? '' : `\`${JSON.stringify(o.default)}\``;
    return `| \`--${o.flag}\` | \`${o.env}\` | \`${o.key}\` | ${def} | ${o.description} |`;
  });
  const head = ['| flag | environment | YAML key | default | description |', '|---|---|---|---|---|'];
  return [...head, ...rows].join('\n');
}
