/**
 * The audit policy file (`--audit-policy-file`), in the apiserver's format: an `audit.k8s.io/v1`
 * `Policy` (YAML or JSON). Copied from k8s.io/apiserver v0.37.2:
 *
 * - the types: `pkg/apis/audit/types.go` (`Policy`, `PolicyRule`, `GroupResources`, `Level`,
 *   `Stage`);
 * - loading: `pkg/audit/policy/reader.go` `LoadPolicyFromBytes`: strict decoding, and on an
 *   unknown or duplicate field a warning and lenient decoding (the field ignored); a group version
 *   other than `audit.k8s.io/v1` or a policy without rules is an error;
 * - validation: `pkg/apis/audit/validation/validation.go` `ValidatePolicy` (levels, stages,
 *   non-resource URLs, groups, resourceNames), its messages.
 */
import { parseDocument } from 'yaml';

/** `audit.Level`: how much of a request an event holds. */
export type Level = 'None' | 'Metadata' | 'Request' | 'RequestResponse';

/** `audit.Stage`: the moments of a request an event is written at. */
export type Stage = 'RequestReceived' | 'ResponseStarted' | 'ResponseComplete' | 'Panic';

/** The levels, least first (`Level.Less` compares by this order). */
export const LEVELS: readonly Level[] = ['None', 'Metadata', 'Request', 'RequestResponse'];

/** The stages in validation.go's order (`validOmitStages`). */
export const STAGES: readonly Stage[] = ['RequestReceived', 'ResponseStarted', 'ResponseComplete', 'Panic'];

/** `Level.Less`: whether `a` is below `b`. */
export function levelLess(a: Level, b: Level): boolean {
  return LEVELS.indexOf(a) < LEVELS.indexOf(b);
}

/** `audit.GroupResources`. `group` "" is the core group, "*" any group. */
export interface GroupResources {
  group: string;
  /**
   * A resource (`pods`), a resource and subresource (`pods/log`), `*` (any), a subresource of any
   * resource (star, slash, `status`), every subresource of one (`pods/` then a star); empty: every
   * resource of the group.
   */
  resources: string[];
  resourceNames: string[];
}

/** `audit.PolicyRule`: a request matching every non-empty list gets `level`. */
export interface PolicyRule {
  level: Level;
  users: string[];
  userGroups: string[];
  verbs: string[];
  resources: GroupResources[];
  /** "" matches cluster-scoped resources. */
  namespaces: string[];
  /** Paths, `*` alone or as the last character (a prefix). */
  nonResourceURLs: string[];
  omitStages: Stage[];
  /** Undefined: the policy's `omitManagedFields`. */
  omitManagedFields?: boolean;
}

/** `audit.Policy`. */
export interface Policy {
  rules: PolicyRule[];
  omitStages: Stage[];
  omitManagedFields: boolean;
}

/** The outcome of {@link loadPolicy}: the policy and the strict-decoding warnings (fields ignored). */
export interface LoadedPolicy {
  policy: Policy;
  warnings: string[];
}

const GROUP_VERSION = 'audit.k8s.io/v1';

const POLICY_FIELDS = new Set(['apiVersion', 'kind', 'metadata', 'rules', 'omitStages', 'omitManagedFields']);
const RULE_FIELDS = new Set([
  'level',
  'users',
  'userGroups',
  'verbs',
  'resources',
  'namespaces',
  'nonResourceURLs',
  'omitStages',
  'omitManagedFields',
]);
const GROUP_RESOURCE_FIELDS = new Set(['group', 'resources', 'resourceNames']);

/** A policy that does not load: `message` is the apiserver's wording, one line. */
export class PolicyError extends Error {}

/**
 * Parses and validates a policy document (YAML, of which JSON is a subset).
 * @throws PolicyError: not YAML, a field of the wrong type, another kind or group version,
 *   validation errors (all of them, `[a, b]` as Go's aggregate), or no rules.
 */
export function loadPolicy(text: string): LoadedPolicy {
  const doc = parseDocument(text, { uniqueKeys: false });
  if (doc.errors.length > 0) throw new PolicyError(`failed decoding: ${oneLine(doc.errors[0]!.message)}`);
  const warnings: string[] = [];
  warnings.push(...duplicateKeys(doc.contents));
  const raw = doc.toJS() as unknown;
  if (!isObject(raw)) throw new PolicyError("failed decoding: Object 'Kind' is missing in the policy");
  const apiVersion = raw.apiVersion;
  const kind = raw.kind;
  if (typeof kind !== 'string' || kind === '')
    throw new PolicyError(`failed decoding: Object 'Kind' is missing in '${oneLine(text).slice(0, 80)}'`);
  if (apiVersion !== GROUP_VERSION)
    throw new PolicyError(`unknown group version field ${String(apiVersion ?? '')}, Kind=${kind} in policy`);
  if (kind !== 'Policy')
    throw new PolicyError(`failed decoding: no kind "${kind}" is registered for version "${GROUP_VERSION}"`);
  unknownFields(raw, POLICY_FIELDS, '', warnings);
  const policy: Policy = {
    rules: list(raw.rules, 'rules', (r, path) => rule(r, path, warnings)),
    omitStages: strings(raw.omitStages, 'omitStages') as Stage[],
    omitManagedFields: bool(raw.omitManagedFields, 'omitManagedFields') ?? false,
  };
  const errs = validatePolicy(policy);
  if (errs.length === 1) throw new PolicyError(errs[0]!);
  if (errs.length > 1) throw new PolicyError(`[${errs.join(', ')}]`);
  if (policy.rules.length === 0) throw new PolicyError('loaded illegal policy with 0 rules');
  return { policy, warnings };
}

function rule(r: unknown, path: string, warnings: string[]): PolicyRule {
  if (!isObject(r)) throw typeError(path, r, 'object');
  unknownFields(r, RULE_FIELDS, path, warnings);
  const omf = bool(r.omitManagedFields, `${path}.omitManagedFields`);
  return {
    level: (str(r.level, `${path}.level`) ?? '') as Level,
    users: strings(r.users, `${path}.users`),
    userGroups: strings(r.userGroups, `${path}.userGroups`),
    verbs: strings(r.verbs, `${path}.verbs`),
    resources: list(r.resources, `${path}.resources`, (g, p) => {
      if (!isObject(g)) throw typeError(p, g, 'object');
      unknownFields(g, GROUP_RESOURCE_FIELDS, p, warnings);
      return {
        group: str(g.group, `${p}.group`) ?? '',
        resources: strings(g.resources, `${p}.resources`),
        resourceNames: strings(g.resourceNames, `${p}.resourceNames`),
      };
    }),
    namespaces: strings(r.namespaces, `${path}.namespaces`),
    nonResourceURLs: strings(r.nonResourceURLs, `${path}.nonResourceURLs`),
    omitStages: strings(r.omitStages, `${path}.omitStages`) as Stage[],
    ...(omf !== undefined ? { omitManagedFields: omf } : {}),
  };
}

/** `ValidatePolicy`: every error, in the apiserver's field-path wording. */
export function validatePolicy(policy: Policy): string[] {
  const errs: string[] = [];
  errs.push(...validateOmitStages(policy.omitStages, 'omitStages'));
  policy.rules.forEach((r, i) => {
    const path = `rules[${i}]`;
    if (r.level === ('' as Level)) errs.push(`${path}.level: Required value`);
    else if (!LEVELS.includes(r.level))
      errs.push(
        `${path}.level: Unsupported value: ${JSON.stringify(r.level)}: supported values: ${LEVELS.map((l) => JSON.stringify(l)).join(', ')}`,
      );
    r.nonResourceURLs.forEach((url, j) => {
      if (url === '*') return;
      const p = `${path}.nonResourceURLs[${j}]`;
      if (!url.startsWith('/'))
        errs.push(
          `${p}: Invalid value: ${JSON.stringify(url)}: non-resource URL rules must begin with a '/' character`,
        );
      if (url !== '' && url.slice(0, -1).includes('*'))
        errs.push(
          `${p}: Invalid value: ${JSON.stringify(url)}: non-resource URL wildcards '*' must be the final character of the rule`,
        );
    });
    for (const g of r.resources) {
      if (g.group !== '' && g.group !== '*' && !isDnsSubdomain(g.group))
        errs.push(
          `${path}.resources.group: Invalid value: ${JSON.stringify(g.group)}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
        );
      if (g.resourceNames.length > 0 && g.resources.length === 0)
        errs.push(
          `${path}.resources.resourceNames: Invalid value: ${goStringSlice(g.resourceNames)}: using resourceNames requires at least one resource`,
        );
    }
    errs.push(...validateOmitStages(r.omitStages, `${path}.omitStages`));
    if (r.nonResourceURLs.length > 0 && (r.resources.length > 0 || r.namespaces.length > 0))
      errs.push(
        `${path}.nonResourceURLs: Invalid value: ${goStringSlice(r.nonResourceURLs)}: rules cannot apply to both regular resources and non-resource URLs`,
      );
  });
  return errs;
}

function validateOmitStages(stages: readonly string[], path: string): string[] {
  return stages.flatMap((s, i) =>
    (STAGES as readonly string[]).includes(s)
      ? []
      : [`${path}[${i}]: Invalid value: ${JSON.stringify(s)}: allowed stages are ${STAGES.join(',')}`],
  );
}

function isDnsSubdomain(s: string): boolean {
  return s.length <= 253 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(s);
}

/** `[]string` as field.Invalid prints it (`%#v`-like: `[]string{"a", "b"}`). */
function goStringSlice(v: readonly string[]): string {
  return `[]string{${v.map((s) => JSON.stringify(s)).join(', ')}}`;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function typeError(path: string, v: unknown, want: string): PolicyError {
  const got = v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
  return new PolicyError(`failed lenient decoding: ${path}: expected ${want}, got ${got}`);
}

function str(v: unknown, path: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw typeError(path, v, 'string');
  return v;
}

function bool(v: unknown, path: string): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw typeError(path, v, 'bool');
  return v;
}

function strings(v: unknown, path: string): string[] {
  return list(v, path, (s, p) => {
    const x = str(s, p);
    if (x === undefined) throw typeError(p, s, 'string');
    return x;
  });
}

function list<T>(v: unknown, path: string, each: (x: unknown, path: string) => T): T[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw typeError(path, v, 'array');
  return v.map((x, i) => each(x, `${path}[${i}]`));
}

function unknownFields(o: Record<string, unknown>, known: Set<string>, path: string, out: string[]): void {
  for (const k of Object.keys(o))
    if (!known.has(k)) out.push(`unknown field "${path === '' ? k : `${path}.${k}`}"`);
}

/** Keys given twice in one mapping (strict decoding's `duplicate field`), anywhere in the document. */
function duplicateKeys(node: unknown): string[] {
  const out: string[] = [];
  const walk = (n: unknown): void => {
    if (!n || typeof n !== 'object') return;
    const items = (n as { items?: unknown[] }).items;
    if (!Array.isArray(items)) return;
    const seen = new Set<string>();
    for (const it of items) {
      const pair = it as { key?: { value?: unknown }; value?: unknown };
      if (pair && typeof pair === 'object' && 'key' in pair) {
        const k = String(pair.key?.value);
        if (seen.has(k)) out.push(`duplicate field "${k}"`);
        seen.add(k);
        walk(pair.value);
      } else walk(it);
    }
  };
  walk(node);
  return out;
}

function oneLine(s: string): string {
  return s.replace(/\s*\n\s*/g, ' ').trim();
}
