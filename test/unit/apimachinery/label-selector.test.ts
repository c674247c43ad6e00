import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LabelSelector, parseLabelSelector } from '../../../src/apimachinery/label-selector.ts';
import { StatusError } from '../../../src/apimachinery/status.ts';

function badRequestMessage(s: string): string {
  try {
    parseLabelSelector(s);
  } catch (e) {
    assert.ok(e instanceof StatusError);
    assert.equal(e.code, 400);
    assert.equal(e.status.reason, 'BadRequest');
    return e.message;
  }
  assert.fail(`selector ${JSON.stringify(s)} parsed`);
}

describe('parseLabelSelector', () => {
  it('parses every operator and prints the canonical form, sorted by key', () => {
    const s = parseLabelSelector('x in (foo,,baz),y,z notin (),!w, a=1 ,b==2,c!=3,d>4,e<5');
    assert.equal(s.toString(), 'a=1,b==2,c!=3,d>4,e<5,!w,x in (,baz,foo),y,z notin ()');
    assert.equal(s.empty, false);
    assert.equal(parseLabelSelector('').empty, true);
    assert.equal(parseLabelSelector('  ').empty, true);
  });

  it('matches like labels.Requirement.Matches', () => {
    const cases: [string, Record<string, string> | undefined, boolean][] = [
      ['app=web', { app: 'web' }, true],
      ['app=web', { app: 'db' }, false],
      ['app=web', undefined, false],
      ['app==web', { app: 'web' }, true],
      ['app!=web', { app: 'db' }, true],
      ['app!=web', {}, true],
      ['app!=web', { app: 'web' }, false],
      ['app in (a,b)', { app: 'b' }, true],
      ['app in (a,b)', { app: 'c' }, false],
      ['app notin (a,b)', {}, true],
      ['app notin (a,b)', { app: 'a' }, false],
      ['app', { app: '' }, true],
      ['app', {}, false],
      ['!app', {}, true],
      ['!app', { app: 'x' }, false],
      ['n>5', { n: '6' }, true],
      ['n>5', { n: '5' }, false],
      ['n>5', { n: 'x' }, false],
      ['n<5', { n: '-1' }, true],
      ['a=,b', { a: '', b: 'x' }, true],
      ['a=1,b=2', { a: '1', b: '3' }, false],
      ['toString', {}, false],
      ['x in (in)', { x: 'in' }, true],
    ];
    for (const [sel, labels, want] of cases) {
      assert.equal(parseLabelSelector(sel).matches(labels), want, `${sel} on ${JSON.stringify(labels)}`);
    }
  });

  it('rejects bad syntax with the apiserver messages', () => {
    assert.equal(
      badRequestMessage('a b'),
      "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
    );
    assert.equal(badRequestMessage('a=b,'), "found '', expected: identifier after ','");
    assert.equal(badRequestMessage(',a'), "found ',', expected: !, identifier, or 'end of string'");
    assert.equal(badRequestMessage('a=b c'), "found 'c', expected: ',' or 'end of string'");
    assert.equal(badRequestMessage('a in b'), "unable to parse requirement: found 'b' expected: '('");
    assert.equal(badRequestMessage('a in (b'), "unable to parse requirement: found '', expected: ',' or ')'");
    assert.equal(
      badRequestMessage('a in (=)'),
      "unable to parse requirement: found '=', expected: ',', ')' or identifier",
    );
    assert.equal(badRequestMessage('a=('), "unable to parse requirement: found '(', expected: identifier");
    assert.equal(badRequestMessage('!'), "unable to parse requirement: found '', expected: identifier");
  });

  it('issue 29 item 5d: a NUL reads as the end of input, as the Go lexer reads it (apiserver v1.37.2 side by side)', () => {
    // The Go Lexer's read() returns 0 past the end: a NUL at the start of a token ends the
    // input, inside a token it ends the token and is consumed. The cache answered all of these
    // 400 (a NUL inside a key or value), the apiserver 200 with the selected objects.
    const str = (s: string) => parseLabelSelector(s).toString();
    assert.equal(str('\0'), '', 'selects everything');
    assert.equal(str(' \0'), '');
    assert.equal(str('app=x\0'), 'app=x');
    assert.equal(str('app\0=x'), 'app=x');
    assert.equal(str('app=\0x'), 'app=x');
    assert.equal(str('app==\0x'), 'app==x');
    assert.equal(str('app=x \0junk'), 'app=x', 'what follows an end at a token start is never read');
    assert.equal(str('app in (x\0,y)'), 'app in (x,y)');
    assert.equal(str('!\0app'), '!app');
    // The apiserver's 400s, word for word.
    assert.equal(badRequestMessage('app=x\0garbage'), "found 'garbage', expected: ',' or 'end of string'");
    assert.equal(badRequestMessage('app=x,\0,b'), "found ',', expected: identifier after ','");
    assert.equal(
      badRequestMessage('app in (x\0\0,y)'),
      "unable to parse requirement: found '', expected: ',' or ')'",
    );
    assert.equal(
      badRequestMessage('!\0=app'),
      "unable to parse requirement: found '=', expected: identifier",
    );
  });

  it('validates keys and values with the apimachinery messages', () => {
    assert.equal(
      badRequestMessage('-a=b'),
      "unable to parse requirement: <nil>: Invalid value: \"-a\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    );
    assert.equal(
      badRequestMessage('a=b$'),
      "unable to parse requirement: values[0][a]: Invalid value: \"b$\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    );
    assert.equal(
      badRequestMessage('a>b'),
      "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be an integer",
    );
    assert.equal(
      badRequestMessage('k'.repeat(64)),
      `unable to parse requirement: <nil>: Invalid value: "${'k'.repeat(64)}": name part must be no more than 63 bytes`,
    );
    assert.match(
      badRequestMessage('Example.com/a'),
      /<nil>: Invalid value: "Example.com\/a": prefix part a lowercase RFC 1123/,
    );
    assert.equal(parseLabelSelector('example.com/a=b').matches({ 'example.com/a': 'b' }), true);
  });

  it('issue 11 item 15: in/notin with ~100k values match in constant time per object (Sets, not scans)', () => {
    const values = Array.from({ length: 100_000 }, (_, i) => `value-${i}`);
    const text = `app in (${values.join(',')}),tier notin (${values.join(',')})`;
    assert.ok(text.length > 1_000_000);
    const parsed = parseLabelSelector(text);
    assert.deepEqual(
      parsed.requirements.map((r) => [r.key, r.operator, r.values.length, r.valueSet.size]),
      [
        ['app', 'in', 100_000, 100_000],
        ['tier', 'notin', 100_000, 100_000],
      ],
    );
    // The same requirements, each value list counting its element reads: a scan reads them all.
    // Timing of the same matches: bench/tools/hot-paths.ts.
    let reads = 0;
    const counted = (values: readonly string[]) =>
      new Proxy(values, {
        get(target, prop, receiver) {
          if (typeof prop === 'string' && /^\d+$/.test(prop)) reads++;
          return Reflect.get(target, prop, receiver);
        },
      });
    const sel = new LabelSelector(parsed.requirements.map((r) => ({ ...r, values: counted(r.values) })));
    // The worst case for a scan: the object's value is absent from both lists, so each
    // requirement would compare against all 100k values (20 000 objects: billions of comparisons).
    let matched = 0;
    for (let i = 0; i < 20_000; i++) {
      if (sel.matches({ app: i % 2 ? 'absent' : `value-${i}`, tier: 'absent' })) matched++;
    }
    assert.equal(matched, 10_000);
    assert.equal(sel.matches({ app: 'value-99999', tier: 'value-0' }), false);
    assert.equal(sel.matches({ app: 'value-99999' }), true);
    assert.equal(reads, 0, 'values looked up in the Set, never scanned');
    assert.equal(sel.toString().length, text.length, 'the values are still there to print (sorted)');
  });
});
