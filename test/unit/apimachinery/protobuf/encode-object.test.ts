/**
 * The protobuf encoder's rules (src/apimachinery/protobuf/encode-object.ts) on hand-checked bytes:
 * Go zero values written, pointers only when set, maps in Go byte order, negative varints, int64
 * beyond 2^53, times, IntOrString, FieldsV1's json-iterator escaping, and the declines. The
 * byte-for-byte comparison with the apiserver is test/e2e/protobuf-encode.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  CannotEncode,
  jsoniterJSON,
  parseGoJSON,
} from '../../../../src/apimachinery/protobuf/encode-object.ts';
import {
  encodeObjectMessage,
  encodeParsed,
  listAnswer,
  listRaw,
  unknownEnvelope,
} from '../../../../src/apimachinery/protobuf/envelope.ts';

const hex = (b: Buffer) => b.toString('hex');
const TIME = 'apimachinery/pkg/apis/meta/v1.Time';
const MICRO = 'apimachinery/pkg/apis/meta/v1.MicroTime';
const INT_OR_STRING = 'apimachinery/pkg/util/intstr.IntOrString';
const OBJECT_META = 'apimachinery/pkg/apis/meta/v1.ObjectMeta';

/** ObjectMeta of an object with only a name: every non-pointer field written, zero or empty. */
const EMPTY_META_TAIL = '12001a0022002a00320038004200';

describe('protobuf encoder', () => {
  it('writes every Go value field even when JSON omits it, pointers only when set', () => {
    // name "a", then generateName, namespace, selfLink, uid, resourceVersion "", generation 0,
    // creationTimestamp empty; no deletionTimestamp (pointer), no maps or slices.
    assert.equal(hex(encodeParsed(OBJECT_META, { name: 'a' })), `0a0161${EMPTY_META_TAIL}`);
    const withPtr = encodeParsed(OBJECT_META, { name: 'a', deletionGracePeriodSeconds: 0 });
    assert.equal(hex(withPtr), `0a0161${EMPTY_META_TAIL}5000`);
  });

  it('empty and absent maps and slices are the same bytes (nothing)', () => {
    const a = encodeObjectMessage('v1', 'ConfigMap', '{"metadata":{"name":"x","labels":{}},"data":{}}');
    const b = encodeObjectMessage('v1', 'ConfigMap', '{"metadata":{"name":"x","finalizers":[]}}');
    assert.equal(hex(a), hex(b));
  });

  it('sorts map keys by UTF-8 bytes as Go sort.Strings, not by UTF-16 code units', () => {
    const m = encodeParsed(OBJECT_META, { labels: { '😀': 'b', '\uE000': 'a', z: 'c' } });
    const keys = [...m.toString('utf8').matchAll(/[z\uE000😀]/gu)].map((x) => x[0]);
    assert.deepEqual(keys, ['z', '\uE000', '😀']);
  });

  it('negative int32 and int64: the 10-byte varint of uint64(v)', () => {
    assert.equal(hex(encodeParsed(INT_OR_STRING, -1)), '080010ffffffffffffffffff011a00');
    assert.equal(hex(encodeParsed(INT_OR_STRING, 'http')), '080110001a0468747470');
    assert.equal(hex(encodeParsed(INT_OR_STRING, null)), '080010001a00');
  });

  it('keeps int64 values beyond 2^53 exact', () => {
    const v = parseGoJSON('{"a":9007199254740993,"b":1.5,"c":-9223372036854775808}') as Record<
      string,
      unknown
    >;
    assert.equal(v.a, 9007199254740993n);
    assert.equal(v.b, 1.5);
    assert.equal(v.c, -9223372036854775808n);
    const meta = encodeParsed(OBJECT_META, { generation: 9007199254740993n });
    assert.ok(hex(meta).includes('3881808080808080100'.slice(0, 18)), hex(meta));
  });

  it('from JSON text: an int64 beyond 2^53 (plain JSON.parse rounds it) is re-parsed exactly, in a LIST too', () => {
    const big = '{"metadata":{"name":"a","generation":9007199254740993}}';
    const exact = encodeParsed('api/core/v1.ConfigMap', parseGoJSON(big));
    assert.equal(hex(encodeObjectMessage('v1', 'ConfigMap', big)), hex(exact));
    // The rounded value would be ...992: its varint ends 80 80 80 80 80 80 80 10, the exact one 81.
    assert.ok(hex(exact).includes('388180808080808010'), hex(exact));
    const small = '{"metadata":{"name":"b","generation":3}}';
    const list = listAnswer('v1', 'ConfigMapList', { resourceVersion: '5' }, 'api/core/v1.ConfigMap', [
      Buffer.from(small),
      Buffer.from(big),
      Buffer.from(small),
    ]);
    const items = [small, big, small].map((t) => encodeParsed('api/core/v1.ConfigMap', parseGoJSON(t)));
    const chunks = unknownEnvelope('v1', 'ConfigMapList', listRaw({ resourceVersion: '5' }, items));
    assert.equal(hex(list), hex(Buffer.concat(chunks)), 'one buffer equal to the per-item chunks');
    // 16 digits inside a FieldsV1 key (a string, not a number): no retry loop, written as is.
    const fields =
      '{"metadata":{"name":"c","managedFields":[{"fieldsV1":{"f:data":{"f:1234567890123456789":{}}}}]}}';
    assert.ok(encodeObjectMessage('v1', 'ConfigMap', fields).includes('f:1234567890123456789'));
    const num = '{"metadata":{"name":"c","managedFields":[{"fieldsV1":{"f:x":12345678901234567890}}]}}';
    assert.ok(encodeObjectMessage('v1', 'ConfigMap', num).includes('{"f:x":12345678901234567890}'));
  });

  it('metav1.Time: seconds, nanos 0, the zero time empty; MicroTime keeps microseconds', () => {
    assert.equal(hex(encodeParsed(TIME, null)), '');
    assert.equal(hex(encodeParsed(TIME, '0001-01-01T00:00:00Z')), '');
    assert.equal(hex(encodeParsed(TIME, '1970-01-01T00:00:00Z')), '08001000');
    assert.equal(hex(encodeParsed(TIME, '1970-01-01T00:00:01Z')), '08011000');
    assert.equal(hex(encodeParsed(TIME, '1969-12-31T23:59:59Z')), '08ffffffffffffffffff011000');
    // 123456 µs = 123456000 ns = varint 80 94 ef 3a
    assert.equal(hex(encodeParsed(MICRO, '1970-01-01T00:00:00.123456Z')), '0800108094ef3a');
  });

  it('FieldsV1: the raw JSON json-iterator writes (no HTML escaping, \\u0008 for \\b)', () => {
    assert.equal(
      jsoniterJSON({ 'f:<a&b>': {}, 'k:{"x":"\b\f\n"}': {} }),
      '{"f:<a&b>":{},"k:{\\"x\\":\\"\\u0008\\u000c\\n\\"}":{}}',
    );
  });

  it('declines what it cannot write exactly, naming why', () => {
    const reason = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        if (e instanceof CannotEncode) return e.reason;
        throw e;
      }
      return 'encoded';
    };
    assert.equal(
      reason(() => encodeObjectMessage('v1', 'ConfigMap', '{"metadata":{},"novel":1}')),
      'unknown-field',
    );
    assert.equal(
      reason(() => encodeObjectMessage('apps/v1', 'ControllerRevision', '{"metadata":{},"data":{}}')),
      'raw-json',
    );
    assert.equal(
      reason(() => encodeObjectMessage('example.com/v1', 'Widget', '{}')),
      'unknown-kind',
    );
    assert.equal(
      reason(() => encodeObjectMessage('v1', 'ConfigMap', '{"metadata":{"name":1}}')),
      'json-type',
    );
    // A ControllerRevision without data encodes: only raw JSON present declines.
    assert.equal(
      reason(() => encodeObjectMessage('apps/v1', 'ControllerRevision', '{"metadata":{}}')),
      'encoded',
    );
  });
});
