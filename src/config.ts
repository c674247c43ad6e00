/**
 * The one configuration schema of kube-cache-proxy. Every setting is declared once in
 * {@link OPTIONS} with its flag, environment variable, YAML key, default and description;
 * command-line flags, `KCP_*` environment variables and the optional YAML file (`--config`)
 * all map onto it (precedence: flag > environment > file > default), and the reference table of
 * docs/configuration.md is generated from the same table ({@link renderReference}).
 */
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from './util/errors.ts';
import { type ListenAddress, parseListenAddress } from './util/listen-address.ts';

export type { ListenAddress };

/** The validated configuration. */
export interface Config {
  /** Path of the kubeconfig; undefined = in-cluster configuration. */
  kubeconfig?: string;
  /** Resources to cache, as `resource[.group]` (`pods`, `deployments.apps`). */
  resources: string[];
  /** Restrict every reflector to one namespace (namespace-scoped RBAC). */
  namespace?: string;
  listen: ListenAddress;
  opsListen: ListenAddress;
  consistentReads: 'cache' | 'upstream';
  logLevel: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
  /** Cap on concurrent short requests (429 past it). */
  maxInflight: number;
  /** Cap on concurrent watches and other long-running requests (429 past it). */
  maxWatchers: number;
}

type Kind = 'string' | 'list' | 'address' | 'enum' | 'int';

/** One setting of the schema. */
export interface OptionSpec {
  key: keyof Config;
  flag: string;
  env: string;
  kind: Kind;
  values?: readonly string[];
  default?: unknown;
  description: string;
}

/** The schema: single source of truth for flags, env vars, file keys and docs. */
export const OPTIONS: readonly OptionSpec[] = [
  {
    key: 'kubeconfig',
    flag: 'kubeconfig',
    env: 'KCP_KUBECONFIG',
    kind: 'string',
    description: 'Path of the kubeconfig used to reach the apiserver. Default: in-cluster configuration.',
  },
  {
    key: 'resources',
    flag: 'resources',
    env: 'KCP_RESOURCES',
    kind: 'list',
    default: [],
    description:
      'Comma-separated resources to cache, as resource[.group] (e.g. pods,configmaps,deployments.apps).',
  },
  {
    key: 'namespace',
    flag: 'namespace',
    env: 'KCP_NAMESPACE',
    kind: 'string',
    description: 'Cache only this namespace (for namespace-scoped RBAC); other requests pass upstream.',
  },
  {
    key: 'listen',
    flag: 'listen',
    env: 'KCP_LISTEN',
    kind: 'address',
    default: '127.0.0.1:8001',
    description:
      'HOST:PORT of the Kubernetes API listener. Loopback only until client authentication exists.',
  },
  {
    key: 'opsListen',
    flag: 'ops-listen',
    env: 'KCP_OPS_LISTEN',
    kind: 'address',
    default: '127.0.0.1:8081',
    description: 'HOST:PORT of the operations listener (/metrics, /healthz, /readyz, /livez).',
  },
  {
    key: 'consistentReads',
    flag: 'consistent-reads',
    env: 'KCP_CONSISTENT_READS',
    kind: 'enum',
    values: ['cache', 'upstream'],
    default: 'cache',
    description:
      'resourceVersion="" reads: "cache" serves them while the upstream watch is proven live and has reached every write made through the proxy; "upstream" always forwards them.',
  },
  {
    key: 'logLevel',
    flag: 'log-level',
    env: 'KCP_LOG_LEVEL',
    kind: 'enum',
    values: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'],
    default: 'info',
    description: 'pino log level.',
  },
  {
    key: 'maxInflight',
    flag: 'max-inflight',
    env: 'KCP_MAX_INFLIGHT',
    kind: 'int',
    default: 400,
    description:
      'Maximum concurrent short requests, counted separately for cache-served and passed-upstream ones (so a stuck apiserver cannot block cached reads); more get 429 with Retry-After.',
  },
  {
    key: 'maxWatchers',
    flag: 'max-watchers',
    env: 'KCP_MAX_WATCHERS',
    kind: 'int',
    default: 1000,
    description: 'Maximum concurrent watches and other long-running requests; more get 429 with Retry-After.',
  },
];

/** Flags that are not settings. */
const META_FLAGS = { config: 'KCP_CONFIG', help: '', version: '' } as const;

/** What {@link loadConfig} returns: a config, or a request for help/version output. */
export type LoadResult = { kind: 'config'; config: Config } | { kind: 'help' } | { kind: 'version' };

function isLoopbackHost(host: string): boolean {
  if (host === 'localhost' || host === '::1' || host === '[::1]') return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

function parseAddress(where: string, v: string): ListenAddress {
  try {
    return parseListenAddress(v);
  } catch {
    throw new ConfigError(`${where}: invalid address ${JSON.stringify(v)} (want HOST:PORT)`);
  }
}

const RESOURCE_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function convert(spec: OptionSpec, where: string, raw: unknown): unknown {
  switch (spec.kind) {
    case 'string':
      if (typeof raw !== 'string' || raw === '') throw new ConfigError(`${where}: want a non-empty string`);
      return raw;
    case 'list': {
      const items = Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.split(',') : undefined;
      if (!items || items.some((i) => typeof i !== 'string'))
        throw new ConfigError(`${where}: want a list of names`);
      const out = (items as string[]).map((s) => s.trim()).filter((s) => s !== '');
      for (const r of out) {
        if (!RESOURCE_RE.test(r))
          throw new ConfigError(`${where}: invalid resource ${JSON.stringify(r)} (want resource[.group])`);
      }
      return [...new Set(out)];
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
    case 'int': {
      const n =
        typeof raw === 'number'
          ? raw
          : typeof raw === 'string' && /^[0-9]+$/.test(raw)
            ? Number(raw)
            : Number.NaN;
      if (!Number.isSafeInteger(n) || n < 1)
        throw new ConfigError(`${where}: invalid value ${JSON.stringify(raw)} (want a positive integer)`);
      return n;
    }
  }
}

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
  const parseOptions: Record<string, { type: 'string' | 'boolean' }> = {
    help: { type: 'boolean' },
    version: { type: 'boolean' },
    config: { type: 'string' },
  };
  for (const o of OPTIONS) parseOptions[o.flag] = { type: 'string' };
  let flags: Record<string, string | boolean | undefined>;
  try {
    const parsed = parseArgs({
      args: inputs.argv,
      options: parseOptions,
      strict: true,
      allowPositionals: false,
    });
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
    out[o.key] = convert(o, where, raw);
    if (o.key === 'kubeconfig' && !(inputs.exists ?? existsSync)(out[o.key] as string)) {
      throw new ConfigError(`${where}: no such file ${JSON.stringify(out[o.key])}`);
    }
    if (o.key === 'listen') {
      const a = out[o.key] as ListenAddress;
      if (!isLoopbackHost(a.host)) {
        throw new ConfigError(
          `${where}: refusing to listen on non-loopback address ${a.host}: client authentication does not exist yet, so anyone reaching it would act with the proxy's credentials (bind 127.0.0.1 or ::1)`,
        );
      }
    }
  }
  return { kind: 'config', config: out as unknown as Config };
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
      `  --${o.flag} ${o.kind === 'enum' ? o.values!.join('|') : o.kind.toUpperCase()}   [${o.env}, ${o.key}]${def}`,
    );
    lines.push(`      ${o.description}`);
  }
  lines.push('  --config FILE   [KCP_CONFIG]', '      YAML file with any of the keys above.');
  lines.push('  --version', '      Print the version and exit.');
  return `${lines.join('\n')}\n`;
}

/** A Markdown reference table of every setting (the generated block of docs/configuration.md). */
export function renderReference(): string {
  const rows = OPTIONS.map((o) => {
    const def = o.default === undefined ? '' : `\`${JSON.stringify(o.default)}\``;
    return `| \`--${o.flag}\` | \`${o.env}\` | \`${o.key}\` | ${def} | ${o.description} |`;
  });
  return ['| flag | environment | YAML key | default | description |', '|---|---|---|---|---|', ...rows].join(
    '\n',
  );
}
