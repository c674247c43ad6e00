/**
 * The authorization attributes of a cached read, as the apiserver builds them
 * (`filters/authorization.go` `GetAuthorizerAttributes` from `request/requestinfo.go`) and
 * turns them into a SubjectAccessReview's `resourceAttributes`
 * (`plugin/pkg/authorizer/webhook/webhook.go` `resourceAttributesFrom`,
 * `fieldSelectorToAuthorizationAPI`, `labelSelectorToAuthorizationAPI`).
 *
 * Selectors are sent only for list and watch (`verbsWithSelectors`; never for get), as parsed
 * requirements (never `rawSelector`). Requirements with operators the API cannot express
 * (`gt`, `lt`) are dropped: selectors AND together, so the check is only as broad or broader.
 * A selector that does not parse is left out (the cache then answers 400 after authorization,
 * as the apiserver does).
 */
import { parseFieldTerms } from '../apimachinery/field-selector.ts';
import { parseLabelSelector } from '../apimachinery/label-selector.ts';
import { listIntegersDecode } from '../apimachinery/list-options.ts';
import type { ResourceRequest } from '../apimachinery/request-info.ts';

/** `metav1.FieldSelectorRequirement` (operators `In`/`NotIn` only, one value each). */
export interface FieldSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn';
  values: string[];
}

/** `metav1.LabelSelectorRequirement`. */
export interface LabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}

/** `authorizationv1.ResourceAttributes` (field order as the Go struct, for the cache key). */
export interface AuthorizationAttributes {
  namespace?: string;
  verb: string;
  group: string;
  version: string;
  resource: string;
  subresource?: string;
  name?: string;
  fieldSelector?: { requirements: FieldSelectorRequirement[] };
  labelSelector?: { requirements: LabelSelectorRequirement[] };
}

/** `fieldSelectorToAuthorizationAPI`: `=`/`==` → In, `!=` → NotIn; undefined when none (or unparsable). */
export function fieldSelectorRequirements(raw: string): FieldSelectorRequirement[] | undefined {
  let terms: ReturnType<typeof parseFieldTerms>;
  try {
    terms = parseFieldTerms(raw);
  } catch {
    return undefined;
  }
  const out = terms.map(
    (t): FieldSelectorRequirement => ({
      key: t.field,
      operator: t.op === '=' ? 'In' : 'NotIn',
      values: [t.value],
    }),
  );
  return out.length > 0 ? out : undefined;
}

/**
 * `labelSelectorToAuthorizationAPI`: `=`/`==`/`in` → In, `!=`/`notin` → NotIn, exists,
 * `!key` → DoesNotExist; `gt`/`lt` dropped. Values as the parser holds them (sorted).
 */
export function labelSelectorRequirements(raw: string): LabelSelectorRequirement[] | undefined {
  let reqs: ReturnType<typeof parseLabelSelector>['requirements'];
  try {
    reqs = parseLabelSelector(raw).requirements;
  } catch {
    return undefined;
  }
  const out: LabelSelectorRequirement[] = [];
  for (const r of reqs) {
    let operator: LabelSelectorRequirement['operator'];
    switch (r.operator) {
      case '=':
      case '==':
      case 'in':
        operator = 'In';
        break;
      case '!=':
      case 'notin':
        operator = 'NotIn';
        break;
      case 'exists':
        operator = 'Exists';
        break;
      case '!':
        operator = 'DoesNotExist';
        break;
      default:
        continue;
    }
    out.push({ key: r.key, operator, ...(r.values.length > 0 ? { values: [...r.values] } : {}) });
  }
  return out.length > 0 ? out : undefined;
}

/** `content.IsPathSegmentName` (no `.`/`..`, no `/` or `%`). */
function isPathSegmentName(s: string): boolean {
  return s !== '.' && s !== '..' && !s.includes('/') && !s.includes('%');
}

/** Whether `parse(raw)` succeeds (an empty selector always does). */
function parses(raw: string, parse: (s: string) => unknown): boolean {
  if (raw === '') return true;
  try {
    parse(raw);
    return true;
  } catch {
    return false;
  }
}

/**
 * The attributes of a cached `get`/`list`/`watch` of `info` with the request's `query`, as
 * `RequestInfoFactory.NewRequestInfo` derives them:
 * - a named `namespaces` object (`/api/v1/namespaces/NAME`, in any group) is reviewed inside
 *   itself: the namespace attribute is its name (the path's `namespaces/{namespace}` form);
 * - for list and watch a `metadata.name=<n>` field selector names the object
 *   (`RequiresExactMatch`: the first `=`/`==` term on the field; not `.`, `..`, nor containing
 *   `/` or `%`), so the check and a denial's message carry that name — but only when the list
 *   options decode (`DecodeParameters`: integers, both selectors), as the apiserver drops the
 *   decoded options on any failure (and then answers 400 only after authorization).
 */
export function readAttributes(
  verb: 'get' | 'list' | 'watch',
  info: ResourceRequest,
  query: URLSearchParams,
): AuthorizationAttributes {
  const namespace =
    info.namespace ?? (info.resource === 'namespaces' && info.name !== undefined ? info.name : undefined);
  const a: AuthorizationAttributes = {
    ...(namespace !== undefined ? { namespace } : {}),
    verb,
    group: info.group,
    version: info.version,
    resource: info.resource,
    ...(info.name !== undefined ? { name: info.name } : {}),
  };
  if (verb === 'get') return a;
  const fs = query.get('fieldSelector') ?? '';
  const ls = query.get('labelSelector') ?? '';
  const fields = fs === '' ? undefined : fieldSelectorRequirements(fs);
  const decoded = listIntegersDecode(query) && parses(fs, parseFieldTerms) && parses(ls, parseLabelSelector);
  if (fields) {
    // `RequiresExactMatch("metadata.name")`: the first `=` term on the field.
    const byName = fields.find((r) => r.key === 'metadata.name' && r.operator === 'In')?.values[0];
    if (decoded && byName !== undefined && byName !== '' && isPathSegmentName(byName)) a.name = byName;
    a.fieldSelector = { requirements: fields };
  }
  const labels = ls === '' ? undefined : labelSelectorRequirements(ls);
  if (labels) a.labelSelector = { requirements: labels };
  return a;
}
