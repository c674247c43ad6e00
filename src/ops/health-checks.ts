/**
 * Named health checks and the apiserver's rendering of them
 * (`staging/src/k8s.io/apiserver/pkg/server/healthz/healthz.go`, `handleRootHealth`):
 * a plain `ok` when every check passes, one `[+]name ok` / `[-]name failed: reason` line per
 * check with `?verbose` or on failure, closed by `<endpoint> check passed|failed`; `?exclude=name`
 * skips a check (`[+]name excluded: ok`). Pure functions: the fastify wiring is in ops-server.ts.
 *
 * One deliberate difference: the apiserver prints `reason withheld` because its health endpoints
 * are public. The ops listener binds loopback by default and reasons never carry credentials, so
 * the reason is shown — it is what an operator running `kubectl exec … curl` wants to read.
 */

/**
 * A named check. `check()` returns undefined when healthy, else a short reason. Must not throw.
 * `note()`, optional, qualifies a passing check on its `[+]name ok (note)` line (not the apiserver's:
 * a resource served from a snapshot says so and its age).
 */
export interface HealthCheck {
  readonly name: string;
  check(): string | undefined;
  note?(): string | undefined;
}

/** Result of running a set of checks for one endpoint. */
export interface HealthReport {
  healthy: boolean;
  /** Body to send: `ok`, or the verbose listing (always verbose when unhealthy). */
  body: string;
}

/**
 * Runs `checks` for the endpoint `name` (`livez`, `readyz`, `healthz`) and renders the body as
 * the apiserver does. `exclude` names checks to skip; names not found produce the apiserver's
 * `warn: some health checks cannot be excluded: no matches for "x"` line.
 */
export function runHealthChecks(
  name: string,
  checks: readonly HealthCheck[],
  opts: { verbose?: boolean; exclude?: readonly string[] } = {},
): HealthReport {
  const excluded = new Set(opts.exclude ?? []);
  let out = '';
  let healthy = true;
  for (const c of checks) {
    if (excluded.delete(c.name)) {
      out += `[+]${c.name} excluded: ok\n`;
      continue;
    }
    const reason = runCheck(c);
    if (reason === undefined) {
      const note = c.note?.();
      out += note ? `[+]${c.name} ok (${note})\n` : `[+]${c.name} ok\n`;
    } else {
      healthy = false;
      out += `[-]${c.name} failed: ${reason}\n`;
    }
  }
  if (excluded.size > 0) {
    const names = [...excluded]
      .sort()
      .map((n) => JSON.stringify(n))
      .join(',');
    out += `warn: some health checks cannot be excluded: no matches for ${names}\n`;
  }
  if (!healthy) return { healthy, body: `${out}${name} check failed\n` };
  if (!opts.verbose) return { healthy, body: 'ok' };
  return { healthy, body: `${out}${name} check passed\n` };
}

/** Runs one check; a check that throws is reported as failed rather than crashing the handler. */
export function runCheck(c: HealthCheck): string | undefined {
  try {
    return c.check();
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** The apiserver's `ping` check: always healthy (the handler ran, so the event loop turns). */
export const pingCheck: HealthCheck = { name: 'ping', check: () => undefined };
