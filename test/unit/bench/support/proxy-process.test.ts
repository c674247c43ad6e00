import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseShebang, shebangEnv, shebangFlags } from '../../../../bench/support/proxy-process.ts';

describe('parseShebang: what the bench runs the proxy with, as the bin does', () => {
  it('splits environment assignments from the Node flags', () => {
    assert.deepEqual(
      parseShebang('#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=2'),
      { env: { MALLOC_MMAP_THRESHOLD_: '131072' }, flags: ['--max-semi-space-size=2'] },
    );
    assert.deepEqual(parseShebang('#!/usr/bin/env -S A=1 B_2=x=y node --a --b'), {
      env: { A: '1', B_2: 'x=y' },
      flags: ['--a', '--b'],
    });
    assert.deepEqual(parseShebang('#!/usr/bin/env -S node --max-semi-space-size=2'), {
      env: {},
      flags: ['--max-semi-space-size=2'],
    });
  });

  it('takes nothing from a line that does not run node through env -S', () => {
    for (const line of ['#!/usr/bin/env node', '#!/usr/bin/env -S A=1 deno run', '/** no shebang */'])
      assert.deepEqual(parseShebang(line), { env: {}, flags: [] }, line);
  });

  it('reads src/cli.ts: the malloc setting and the V8 flag the image carries too', () => {
    const cli = fileURLToPath(new URL('../../../../src/cli.ts', import.meta.url));
    assert.deepEqual(shebangEnv(cli), { MALLOC_MMAP_THRESHOLD_: '131072' });
    assert.deepEqual(shebangFlags(cli), ['--max-semi-space-size=2']);
  });
});
