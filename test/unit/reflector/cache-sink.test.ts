import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CacheSink, observedSink } from '../../../src/reflector/cache-sink.ts';

describe('observedSink', () => {
  it('onFirstSync after the first replace, onRelist after every later one (issue 15), onEvent per change', () => {
    const calls: string[] = [];
    const sink: CacheSink = {
      replace: (_o, rv) => calls.push(`replace ${rv}`),
      add: () => calls.push('add'),
      update: () => calls.push('update'),
      delete: () => calls.push('delete'),
      bookmark: (rv) => calls.push(`bookmark ${rv}`),
      setLive: () => {},
    };
    const s = observedSink(sink, {
      onEvent: () => calls.push('event'),
      onFirstSync: () => calls.push('first'),
      onRelist: () => calls.push('relist'),
    });
    s.replace([], '5');
    s.add({} as never);
    s.bookmark('7');
    s.replace([], '9');
    s.replace([], '11');
    assert.deepEqual(calls, [
      'replace 5',
      'first',
      'event',
      'add',
      'bookmark 7',
      'replace 9',
      'relist',
      'replace 11',
      'relist',
    ]);
  });
});
