/** An indented JSON answer copied into the writer's batch buffers (`filled-body.ts`). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bodyBytes } from '../../../src/server/filled-body.ts';
import { indentedBody } from '../../../src/server/indented-body.ts';

describe('indentedBody', () => {
  const pieces = ['{"kind":"List","items":[', '{"a":"x,y"}', ',', '{"b":[]}', ']}\n'].map((s) =>
    Buffer.from(s),
  );
  const want =
    '{\n  "kind": "List",\n  "items": [\n    {\n      "a": "x,y"\n    },\n    {\n      "b": []\n    }\n  ]\n}';

  it('its length up front, its bytes the indented text', () => {
    const body = indentedBody(pieces);
    assert.equal(body.length, Buffer.byteLength(want));
    assert.equal(bodyBytes(body).toString(), want);
  });

  it('filled in batches smaller than a piece: every byte once, in order, then 0', () => {
    for (const size of [1, 3, 7, 64]) {
      const body = indentedBody(pieces);
      const got: Buffer[] = [];
      const into = Buffer.alloc(size);
      for (let n = body.fill(into); n > 0; n = body.fill(into)) got.push(Buffer.from(into.subarray(0, n)));
      assert.equal(Buffer.concat(got).toString(), want, `batches of ${size}`);
      assert.equal(body.fill(into), 0);
    }
  });
});
