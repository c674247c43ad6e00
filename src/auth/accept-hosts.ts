/**
 * The `Host` allow-list of the modes without authentication, after `kubectl proxy`'s
 * `--accept-hosts` (`k8s.io/kubectl/pkg/proxy/proxy_server.go`: `extractHost` + `accept`): a
 * page in a browser on the same machine can make requests to a loopback port under any DNS name
 * (DNS rebinding); only the names below are the machine itself.
 *
 * Deliberate difference: kubectl proxy strips the port with `net.SplitHostPort`, which also
 * strips the brackets of an IPv6 literal, so its own default `^\[::1\]$` never matches
 * `Host: [::1]:8001` (kubectl refuses it). Here only the port is stripped and `[::1]:8001`
 * is accepted, as the default intends.
 */

/** The host of a `Host` header without its port; IPv6 literals keep their brackets. */
export function hostWithoutPort(header: string): string {
  if (header.startsWith('[')) {
    const end = header.indexOf(']');
    return end < 0 ? header : header.slice(0, end + 1);
  }
  const colon = header.lastIndexOf(':');
  // One colon: `name:port`. More (a bare IPv6 literal, invalid in Host): kept as is.
  if (colon >= 0 && header.indexOf(':') === colon && /^\d*$/.test(header.slice(colon + 1)))
    return header.slice(0, colon);
  return header;
}

/** A compiled `--accept-hosts`. */
export class AcceptHosts {
  readonly #patterns: RegExp[];
  /** `patterns`: regular expression sources (already validated by the config). */
  constructor(patterns: readonly string[]) {
    this.#patterns = patterns.map((p) => new RegExp(p));
  }

  /** Whether a request with this `Host` header is accepted (a missing Host never is). */
  accepts(host: string | undefined): boolean {
    if (host === undefined) return false;
    const h = hostWithoutPort(host);
    return this.#patterns.some((p) => p.test(h));
  }
}
