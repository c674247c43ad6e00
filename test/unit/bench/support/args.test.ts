import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { toolArgs, words } from '../../../../bench/support/args.ts';

describe('toolArgs: the bench tools command line', () => {
  const spec = {
    numbers: { n: 8, 'stall-s': 30 },
    strings: { cpu: undefined as string | undefined, mode: 'a' },
    lists: ['cli', 'extra-args'] as const,
    flags: ['idle', 'json'] as const,
  };

  it('defaults when nothing is given', () => {
    assert.deepEqual(toolArgs(spec, []), {
      n: 8,
      'stall-s': 30,
      cpu: undefined,
      mode: 'a',
      cli: [],
      'extra-args': [],
      idle: false,
      json: false,
      positionals: [],
    });
  });

  it('values, --name=value, repeated lists, flags, positionals; a value may start with --', () => {
    const a = toolArgs(spec, [
      'pods',
      '--n',
      '3',
      '--stall-s=0.5',
      '--cli',
      'x/cli.ts',
      '--cli',
      'y/cli.ts',
      '--extra-args',
      '--consistent-reads=proven --x',
      '--idle',
      '--cpu',
      '0-1',
      '100',
    ]);
    assert.equal(a.n, 3);
    assert.equal(a['stall-s'], 0.5);
    assert.deepEqual(a.cli, ['x/cli.ts', 'y/cli.ts']);
    assert.deepEqual(words(a['extra-args']), ['--consistent-reads=proven', '--x']);
    assert.equal(a.idle, true);
    assert.equal(a.json, false);
    assert.equal(a.cpu, '0-1');
    assert.deepEqual(a.positionals, ['pods', '100']);
  });

  it('refuses an unknown option, a missing value and a number that is not one, naming it', () => {
    assert.throws(() => toolArgs(spec, ['--bogus', '1']), /unknown option --bogus/);
    assert.throws(() => toolArgs(spec, ['--n']), /--n needs a value/);
    assert.throws(() => toolArgs(spec, ['--n', 'ten']), /--n ten: not a number/);
    assert.throws(() => toolArgs(spec, ['--n', '']), /not a number/);
  });
});
