/**
 * Scoped caches (issue 13): a cached resource may carry an upstream selector, e.g.
 * `pods[fieldSelector=spec.nodeName=n1]`. The reflector lists and watches with exactly that
 * selector; a request is served from such a cache only when its own selectors provably stay
 * inside the scope, i.e. contain every requirement of the scope (same key, operator and values;
 * label `=` and `==` are the same operator, as in apimachinery `selection.Equals` /
 * `DoubleEquals` which `Requirement.Matches` treats alike).
 *
 * The `--resources` entry syntax (one string syntax for the flag, `KCP_RESOURCES` and the YAML
 * `resources:` list):
 *
 *     resource[.group][ '[' (fieldSelector|labelSelector)=EXPR (';' …)? ']' ]
 *
 * Entries are separated by commas outside `[...]` (selector expressions contain commas).
 */
import { FieldSelector, parseFieldTerms } from './field-selector.ts';
import { isSelectableField, selectableFields } from './field-sets.ts';
import type { ResourceInfo, ResourceScope } from './gvr.ts';
import { type LabelRequirement, parseLabelSelector } from './label-selector.ts';
import type { KubeObject } from './object.ts';

export type { ResourceScope };

/**
 * One configured resource: its name and, for a scoped cache, the upstream selectors
 * (`fieldSelector`, `labelSelector`: apiserver syntax; absent: none).
 */
export interface ResourceSpec extends ResourceScope {
  /** As configured: `resource[.group]` (`pods`, `deployments.apps`). */
  name: string;
}

const RESOURCE_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** An entry that does not parse; `message` names the entry, the caller prefixes the flag/file. */
export class ResourceSpecError extends Error {}

/**
 * Splits a `--resources` value into entries on the commas outside `[...]`; blanks dropped.
 * @throws ResourceSpecError on an unbalanced `[` or `]`.
 */
export function splitResourceEntries(value: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  const push = (end: number) => {
    const e = value.slice(start, end).trim();
    if (e !== '') out.push(e);
  };
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c === '[') depth++;
    else if (c === ']') {
      if (depth === 0) throw new ResourceSpecError(`unbalanced "]" in ${JSON.stringify(value)}`);
      depth--;
    } else if (c === ',' && depth === 0) {
      push(i);
      start = i + 1;
    }
  }
  if (depth !== 0) throw new ResourceSpecError(`unbalanced "[" in ${JSON.stringify(value)}`);
  push(value.length);
  return out;
}

/** Characters that would change a selector's structure if a variable's value carried them. */
const SELECTOR_SYNTAX = /[\s,;[\]()=!]/;

/**
 * Expands `$(VAR)` from `env` like the kubelet expands container args
 * (`third_party/forked/golang/expansion`): `$$` is a literal `$`, a `$` before anything else
 * stays as it is. Unlike the kubelet, an unset variable is an error (a scope silently built
 * from the text `$(NODE_NAME)` would cache nothing), and so are an empty value and one with
 * selector syntax in it: `spec.nodeName=` would silently cache every unscheduled pod instead of
 * the node's, and `n1,metadata.namespace!=x` would add requirements nobody wrote.
 * @throws ResourceSpecError naming the variable.
 */
export function expandVariables(s: string, env: Readonly<Record<string, string | undefined>>): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c !== '$' || i + 1 >= s.length) {
      out += c;
      continue;
    }
    const n = s[i + 1];
    if (n === '$') {
      out += '$';
      i++;
    } else if (n === '(') {
      const end = s.indexOf(')', i + 2);
      if (end < 0) throw new ResourceSpecError(`unterminated "$(" in ${JSON.stringify(s)}`);
      const name = s.slice(i + 2, end);
      const v = env[name];
      if (v === undefined) throw new ResourceSpecError(`environment variable ${name} is not set`);
      if (v === '') throw new ResourceSpecError(`environment variable ${name} is empty`);
      if (SELECTOR_SYNTAX.test(v))
        throw new ResourceSpecError(
          `environment variable ${name} is ${JSON.stringify(v)}: a value may not contain spaces or any of , ; [ ] ( ) = !`,
        );
      out += v;
      i = end;
    } else out += c;
  }
  return out;
}

/**
 * Parses one entry (after variable expansion): `pods`, `pods[fieldSelector=spec.nodeName=n1]`,
 * `configmaps[labelSelector=app in (a,b);fieldSelector=metadata.namespace=x]`. Both selectors
 * are checked with the apiserver's grammars (`labels.Parse`, `fields.ParseSelector`); whether
 * the kind supports a field is only known to the apiserver (the reflector reports its 400).
 * @throws ResourceSpecError naming the entry.
 */
export function parseResourceEntry(entry: string): ResourceSpec {
  const q = JSON.stringify(entry);
  const open = entry.indexOf('[');
  const name = (open < 0 ? entry : entry.slice(0, open)).trim();
  if (!RESOURCE_RE.test(name))
    throw new ResourceSpecError(`invalid resource ${JSON.stringify(name)} (want resource[.group])`);
  const spec: ResourceSpec = { name };
  if (open < 0) return spec;
  if (!entry.endsWith(']') || entry.indexOf(']') !== entry.length - 1 || entry.indexOf('[', open + 1) >= 0)
    throw new ResourceSpecError(`${q}: want one [fieldSelector=…;labelSelector=…] scope at the end`);
  const body = entry.slice(open + 1, -1);
  if (body.trim() === '')
    throw new ResourceSpecError(`${q}: empty scope (want fieldSelector=EXPR and/or labelSelector=EXPR)`);
  for (const part of body.split(';')) {
    const eq = part.indexOf('=');
    const key = (eq < 0 ? part : part.slice(0, eq)).trim();
    const expr = eq < 0 ? '' : part.slice(eq + 1).trim();
    if (key !== 'fieldSelector' && key !== 'labelSelector')
      throw new ResourceSpecError(
        `${q}: unknown scope key ${JSON.stringify(key)} (want fieldSelector or labelSelector)`,
      );
    if (spec[key] !== undefined) throw new ResourceSpecError(`${q}: ${key} given twice`);
    if (expr === '') throw new ResourceSpecError(`${q}: empty ${key}`);
    try {
      if (key === 'labelSelector') parseLabelSelector(expr);
      else parseFieldTerms(expr);
    } catch (err) {
      throw new ResourceSpecError(`${q}: invalid ${key}: ${(err as Error).message}`);
    }
    spec[key] = expr;
  }
  return spec;
}

/**
 * `--resources`: a string (flag, variable) or a list of strings (YAML), each string split
 * into entries on the commas outside `[...]`, `$(VAR)` expanded from `env`, then parsed. A
 * resource named twice is an error: two scopes of one resource would need two caches behind
 * one path.
 * @throws ResourceSpecError naming the entry (the caller names the flag, variable or file).
 */
export function parseResourceList(
  raw: unknown,
  env: Readonly<Record<string, string | undefined>>,
): ResourceSpec[] {
  const items = Array.isArray(raw) ? raw : typeof raw === 'string' ? [raw] : undefined;
  if (!items || items.some((i) => typeof i !== 'string'))
    throw new ResourceSpecError('want a list of resource[.group][scope] strings');
  const out: ResourceSpec[] = [];
  const seen = new Set<string>();
  for (const item of items as string[]) {
    for (const entry of splitResourceEntries(item)) {
      const spec = parseResourceEntry(expandVariables(entry, env));
      if (seen.has(spec.name))
        throw new ResourceSpecError(`resource ${JSON.stringify(spec.name)} given twice`);
      seen.add(spec.name);
      out.push(spec);
    }
  }
  return out;
}

/** Whether `s` carries a scope (a selector the reflector lists and watches with). */
export function isScoped(s: ResourceScope | undefined): boolean {
  return s !== undefined && (s.fieldSelector !== undefined || s.labelSelector !== undefined);
}

/** The scope as written in `--resources` (`[fieldSelector=…;labelSelector=…]`), or "" unscoped. */
export function scopeString(s: ResourceScope | undefined): string {
  if (!s || !isScoped(s)) return '';
  const parts: string[] = [];
  if (s.fieldSelector !== undefined) parts.push(`fieldSelector=${s.fieldSelector}`);
  if (s.labelSelector !== undefined) parts.push(`labelSelector=${s.labelSelector}`);
  return `[${parts.join(';')}]`;
}

/** `=` and `==` are the same label operator (`Requirement.Matches`). */
function labelOp(op: string): string {
  return op === '==' ? '=' : op;
}

function sameRequirement(a: LabelRequirement, b: LabelRequirement): boolean {
  if (a.key !== b.key || labelOp(a.operator) !== labelOp(b.operator)) return false;
  if (a.values.length !== b.values.length) return false;
  return a.values.every((v, i) => v === b.values[i]);
}

/**
 * Whether a request with these `labelSelector` / `fieldSelector` query values provably selects
 * only objects inside `scope`: each scope requirement appears among the request's (same key,
 * operator and values; values are sorted by both parsers, field `=`/`==` are one operator).
 * A request may add requirements of its own (the cache applies them). Syntax errors in the
 * request's selectors count as "not inside" (the caller's own parsing answers them).
 */
export function withinScope(
  scope: ResourceScope | undefined,
  labelSelector: string,
  fieldSelector: string,
): boolean {
  if (!scope || !isScoped(scope)) return true;
  try {
    if (scope.fieldSelector !== undefined) {
      const have = parseFieldTerms(fieldSelector);
      for (const t of parseFieldTerms(scope.fieldSelector)) {
        if (!have.some((h) => h.field === t.field && h.op === t.op && h.value === t.value)) return false;
      }
    }
    if (scope.labelSelector !== undefined) {
      const have = parseLabelSelector(labelSelector).requirements;
      for (const r of parseLabelSelector(scope.labelSelector).requirements) {
        if (!have.some((h) => sameRequirement(h, r))) return false;
      }
    }
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether `obj` (a whole object, e.g. a write's answer) lies inside the scope of `resource`:
 * matched as the apiserver's watch filter would (`labels` and the kind's field set,
 * `field-sets.ts`). undefined when the cache cannot evaluate a scope field for this kind (only
 * the apiserver knows it): the caller then assumes it may.
 */
export function objectInScope(resource: ResourceInfo, obj: KubeObject): boolean | undefined {
  const scope = resource.scope;
  if (!scope || !isScoped(scope)) return true;
  if (
    scope.labelSelector !== undefined &&
    !parseLabelSelector(scope.labelSelector).matches(obj.metadata.labels)
  )
    return false;
  if (scope.fieldSelector === undefined) return true;
  const terms = parseFieldTerms(scope.fieldSelector);
  if (terms.some((t) => !isSelectableField(resource, t.field))) return undefined;
  return new FieldSelector(terms).matches(selectableFields(resource, obj));
}
