/**
 * A kubeconfig whose user is an `auth-provider: oidc` with an unsigned ID token that expires in
 * 2286 (client-node's OIDC provider sends it as it is, no issuer is contacted): what the lean
 * client-node loading must load its provider for, on first use.
 */
import { writeFileSync } from 'node:fs';

/** The ID token of {@link writeOidcKubeconfig}'s user (sent as `Bearer <token>`). */
export const OIDC_ID_TOKEN = 'eyJhbGciOiJub25lIn0.eyJleHAiOjk5OTk5OTk5OTl9.';

/** Writes the kubeconfig to `path` (server https://127.0.0.1:6443, optional `proxy-url`). */
export function writeOidcKubeconfig(path: string, opts: { proxyUrl?: string } = {}): void {
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'c',
          cluster: {
            server: 'https://127.0.0.1:6443',
            ...(opts.proxyUrl !== undefined ? { 'proxy-url': opts.proxyUrl } : {}),
          },
        },
      ],
      users: [
        {
          name: 'u',
          user: {
            'auth-provider': {
              name: 'oidc',
              config: {
                'id-token': OIDC_ID_TOKEN,
                'client-id': 'x',
                'idp-issuer-url': 'https://idp.invalid',
              },
            },
          },
        },
      ],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'c',
    }),
  );
}
