/**
 * Which apiserver a snapshot belongs to (docs/design.md §3, "Snapshots and warm restart"): the
 * upstream's URL and the `kube-system` namespace's UID (a cluster re-created at the same URL
 * has another). Read once per process, shared by every resource; retried while the upstream is
 * unreachable.
 */
import type { Upstream } from '../upstream/connection.ts';
import { upstreamGetBuffer } from '../upstream/request.ts';
import { UpstreamError } from '../util/errors.ts';
import type { ApiserverIdentity } from './snapshot-format.ts';

/** The identity of the upstream, learnt once. */
export class IdentitySource {
  readonly #up: Pick<Upstream, 'baseUrl' | 'dispatcher' | 'authorization'>;
  #known: ApiserverIdentity | undefined;
  #pending: Promise<ApiserverIdentity> | undefined;

  constructor(up: Pick<Upstream, 'baseUrl' | 'dispatcher' | 'authorization'>) {
    this.#up = up;
  }

  /** The upstream's URL as configured. */
  get server(): string {
    return this.#up.baseUrl;
  }

  /** The identity once learnt; undefined before. */
  known(): ApiserverIdentity | undefined {
    return this.#known;
  }

  /**
   * The identity: `GET /api/v1/namespaces/kube-system` (its UID; null when the proxy may not
   * read it: 401, 403, 404). Concurrent callers share one request.
   * @throws the network error or a 5xx when the upstream cannot answer (the caller retries).
   */
  get(signal?: AbortSignal): Promise<ApiserverIdentity> {
    if (this.#known) return Promise.resolve(this.#known);
    this.#pending ??= this.#fetch(signal).finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  async #fetch(signal?: AbortSignal): Promise<ApiserverIdentity> {
    let uid: string | null = null;
    try {
      const body = await upstreamGetBuffer(
        this.#up as Upstream,
        '/api/v1/namespaces/kube-system',
        {},
        signal,
      );
      const ns = JSON.parse(body.toString('utf8')) as { metadata?: { uid?: unknown } };
      uid = typeof ns.metadata?.uid === 'string' ? ns.metadata.uid : null;
    } catch (err) {
      if (!(err instanceof UpstreamError) || ![401, 403, 404].includes(err.statusCode)) throw err;
    }
    this.#known = { server: this.#up.baseUrl, kubeSystemUID: uid };
    return this.#known;
  }
}

/**
 * Whether a snapshot taken from `saved` may be served by a proxy whose upstream is `now`: same
 * URL, and the same `kube-system` UID when both are known. Returns the difference, or undefined.
 */
export function identityMismatch(saved: ApiserverIdentity, now: ApiserverIdentity): string | undefined {
  if (saved.server !== now.server) return `apiserver ${saved.server}, now ${now.server}`;
  if (saved.kubeSystemUID !== null && now.kubeSystemUID !== null && saved.kubeSystemUID !== now.kubeSystemUID)
    return `kube-system namespace uid ${saved.kubeSystemUID}, now ${now.kubeSystemUID}`;
  return undefined;
}
