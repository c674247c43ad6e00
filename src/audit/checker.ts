/**
 * Which level and stages a request is audited at: the first rule of the policy that matches it,
 * else `None`. Copied from k8s.io/apiserver v0.37.2 `pkg/audit/policy/checker.go`
 * (`NewPolicyRuleEvaluator`, `EvaluatePolicyRule`, `ruleMatches`, `ruleMatchesResource` with the
 * `*` form, a subresource of any resource (star, slash, name), every subresource of one
 * (name, slash, star) and the `*` group, `ruleMatchesNonResource` with a
 * trailing `*` prefix), over the request's authorizer attributes.
 */
import type { UserInfo } from '../auth/user-info.ts';
import type { Level, Policy, PolicyRule, Stage } from './policy.ts';

/**
 * `authorizer.Attributes` as the audit policy reads them. A resource request has `resource`;
 * a non-resource request only `path`.
 */
export interface AuditAttributes {
  /** Undefined: no authenticated user (rules with users or userGroups never match). */
  user: UserInfo | undefined;
  /** Lower-case Kubernetes verb: get, list, watch, create, … (HTTP method, lower-case, for a non-resource path). */
  verb: string;
  resourceRequest: boolean;
  /** The request's path (no query). */
  path: string;
  namespace?: string;
  apiGroup?: string;
  apiVersion?: string;
  resource?: string;
  subresource?: string;
  name?: string;
}

/** `audit.RequestAuditConfig`: what the policy says of one request. */
export interface RequestAuditConfig {
  level: Level;
  omitStages: readonly Stage[];
  omitManagedFields: boolean;
}

/** `NewPolicyRuleEvaluator`: each rule's omitStages joined with the policy's. */
export class PolicyRuleEvaluator {
  readonly #policy: Policy;
  constructor(policy: Policy) {
    this.#policy = {
      ...policy,
      rules: policy.rules.map((r) => ({
        ...r,
        omitStages: [...new Set([...policy.omitStages, ...r.omitStages])],
      })),
    };
  }

  /** `EvaluatePolicyRule`: the first matching rule's level, stages and managed-fields choice. */
  evaluate(a: AuditAttributes): RequestAuditConfig {
    const p = this.#policy;
    for (const r of p.rules)
      if (ruleMatches(r, a))
        return {
          level: r.level,
          omitStages: r.omitStages,
          omitManagedFields: r.omitManagedFields ?? p.omitManagedFields,
        };
    return { level: 'None', omitStages: p.omitStages, omitManagedFields: p.omitManagedFields };
  }
}

/** `ruleMatches`. */
export function ruleMatches(r: PolicyRule, a: AuditAttributes): boolean {
  const user = a.user;
  if (r.users.length > 0 && (!user || !r.users.includes(user.username))) return false;
  if (r.userGroups.length > 0) {
    if (!user?.groups.some((g) => r.userGroups.includes(g))) return false;
  }
  if (r.verbs.length > 0 && !r.verbs.includes(a.verb)) return false;
  if (r.namespaces.length > 0 || r.resources.length > 0) return ruleMatchesResource(r, a);
  if (r.nonResourceURLs.length > 0) return ruleMatchesNonResource(r, a);
  return true;
}

function ruleMatchesNonResource(r: PolicyRule, a: AuditAttributes): boolean {
  if (a.resourceRequest) return false;
  return r.nonResourceURLs.some((spec) => pathMatches(a.path, spec));
}

/** `pathMatches`: `*`, the exact path, or a prefix ending in `*`. */
export function pathMatches(path: string, spec: string): boolean {
  if (spec === '*') return true;
  if (spec === path) return true;
  // strings.TrimRight(spec, "*"): every trailing `*`.
  return spec.endsWith('*') && path.startsWith(spec.replace(/\*+$/, ''));
}

function ruleMatchesResource(r: PolicyRule, a: AuditAttributes): boolean {
  if (!a.resourceRequest) return false;
  // Non-namespaced resources use the empty string.
  if (r.namespaces.length > 0 && !r.namespaces.includes(a.namespace ?? '')) return false;
  if (r.resources.length === 0) return true;
  const apiGroup = a.apiGroup ?? '';
  const resource = a.resource ?? '';
  const subresource = a.subresource ?? '';
  const combined = subresource !== '' ? `${resource}/${subresource}` : resource;
  const name = a.name ?? '';
  for (const gr of r.resources) {
    if (gr.group !== apiGroup && gr.group !== '*') continue;
    if (gr.resources.length === 0) return true;
    for (const res of gr.resources) {
      if (gr.resourceNames.length > 0 && !gr.resourceNames.includes(name)) continue;
      if (res === combined || res === '*') return true;
      if (subresource !== '' && res.startsWith('*/') && subresource === res.slice(2)) return true;
      if (res.endsWith('/*') && resource === res.slice(0, -2)) return true;
    }
  }
  return false;
}
