/**
 * Issue 32, events (`src/printers/core-event.ts`, `printEvent`): core/v1 events and
 * events.k8s.io/v1 events (served by the same storage, printed from the internal core Event),
 * side by side with the fixture apiserver (`test/support/table-side-by-side.ts`): a repeated
 * warning with a source, a singleton with an event time and a reporting controller, a series.
 */
import { type TableKind, tableSuite } from '../support/table-side-by-side.ts';

const KINDS: TableKind[] = [
  ['ns:/api/v1/events', 'events'],
  ['ns:/apis/events.k8s.io/v1/events', 'events.events.k8s.io'],
];

tableSuite('issue 32: Table answers of events (printEvent) equal the apiserver', KINDS, {
  async setup(s) {
    const { create, meta, ago, ns } = s;
    const P = `/api/v1/namespaces/${ns}`;
    await create(`${P}/events`, {
      metadata: meta('ev-a'),
      involvedObject: { kind: 'Pod', name: 'p-running', namespace: ns, fieldPath: 'spec.containers{app}' },
      reason: 'BackOff',
      message: '  Back-off restarting failed container  ',
      type: 'Warning',
      source: { component: 'kubelet', host: 'n1' },
      count: 5,
      firstTimestamp: ago(600),
      lastTimestamp: ago(20),
    });
    await create(`${P}/events`, {
      metadata: meta('ev-b'),
      involvedObject: { kind: 'ConfigMap', namespace: ns },
      reason: 'Starting',
      message: 'hello',
      type: 'Normal',
      eventTime: new Date(Date.now() - 90_000).toISOString().replace(/Z$/, '000Z'),
      reportingComponent: 'test-controller',
      reportingInstance: 'inst-1',
      action: 'Start',
    });
    // events.k8s.io/v1: its own field names (regarding, note, a series; the deprecated* fields it
    // refuses on create are the core events' above, listed here as well).
    const micro = (sec: number) => new Date(Date.now() - sec * 1000).toISOString().replace(/Z$/, '000Z');
    const E = `/apis/events.k8s.io/v1/namespaces/${ns}/events`;
    await create(E, {
      metadata: meta('ev2-series'),
      eventTime: micro(300),
      series: { count: 4, lastObservedTime: micro(30) },
      reportingController: 'example.com/ctl',
      reportingInstance: 'ctl-1',
      action: 'Reconcile',
      reason: 'Synced',
      regarding: { kind: 'Deployment', name: 'web', namespace: ns, apiVersion: 'apps/v1' },
      related: { kind: 'Pod', name: 'web-1', namespace: ns },
      note: '  synced again  ',
      type: 'Normal',
    });
    await create(E, {
      metadata: meta('ev2-old'),
      eventTime: micro(120),
      reportingController: 'kubelet',
      reportingInstance: 'n1',
      action: 'Pull',
      reason: 'Pulled',
      regarding: { kind: 'Pod', name: 'p', namespace: ns, fieldPath: 'spec.containers{app}' },
      note: 'pulled',
      type: 'Warning',
    });
  },
});
