/**
 * The on-demand cache manager's subscription to the server's request hooks
 * (`server/request-hooks.ts`): each admitted request for a resource is told to the manager
 * (`on-demand-notice.ts`: a use, or a LIST/WATCH that may start a cache once the apiserver
 * answered it 2xx), and a watch passed upstream while a cache of its resource starts is
 * registered with it (`passed-through-endings.ts`: held as a use, handed over when it re-watches).
 */
import type { RequestHook } from '../server/request-hooks.ts';
import type { OnDemandHook } from './on-demand-hook.ts';
import { onDemandReasonOf, tellOnDemandOf } from './on-demand-notice.ts';
import { passedThroughEndings } from './passed-through-endings.ts';

/**
 * The {@link RequestHook} of the on-demand manager `m`. A request whose answer reads another
 * resource's cache (`needs`: a custom resource's Table reads its CRD) uses that cache when it is
 * started, and, when it is not, starts it as a LIST of it would: once the apiserver answered the
 * request 2xx (the CRDs are then cached as any resource, and the next Tables are printed).
 */
export function onDemandRequestHook(m: OnDemandHook): RequestHook {
  return {
    admitted(r) {
      const { info, method, query, headers, needs } = r;
      const own = tellOnDemandOf(m, {
        info,
        method,
        query,
        reason: onDemandReasonOf(info, r.reason, query, headers),
      });
      // A use of the needed cache if started (a request it serves: no reason); nothing else yet.
      if (needs) m.request(needs, undefined, 'other');
      const later =
        own || needs
          ? (status: number) => {
              own?.(status);
              if (needs && status >= 200 && status < 300) m.request(needs, 'not-cached', 'list');
            }
          : undefined;
      return {
        ...(later ? { upstreamStatus: later } : {}),
        passedThrough: (reason, endings) =>
          endings.track
            ? {
                ...endings,
                ...passedThroughEndings({
                  track: endings.track,
                  onDemand: m,
                  info,
                  longRunning: r.longRunning,
                  method,
                  query,
                  // A Table watch (`kubectl get -w`) of an uncached resource: no cache would answer it.
                  reason: onDemandReasonOf(info, reason, query, headers),
                }),
              }
            : endings,
      };
    },
  };
}
