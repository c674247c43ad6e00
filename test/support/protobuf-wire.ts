/**
 * A tiny protobuf wire-format writer for tests: builds Kubernetes protobuf answers
 * (`k8s\0` + runtime.Unknown) field by field, as the apiserver's generated marshallers do.
 */

function varint(n: number): Buffer {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v % 128) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return Buffer.from(out);
}

/** A length-delimited field (`num`, wire type 2) holding `body` (a string or a message). */
export function pbField(num: number, body: Buffer | string): Buffer {
  const b = typeof body === 'string' ? Buffer.from(body) : body;
  return Buffer.concat([varint(num * 8 + 2), varint(b.length), b]);
}

/** A varint field (`num`, wire type 0). */
export function pbVarint(num: number, v: number): Buffer {
  return Buffer.concat([varint(num * 8), varint(v)]);
}

/** `k8s\0` + Unknown{ typeMeta{apiVersion, kind}, raw, contentType "" }. */
export function k8sProtobuf(apiVersion: string, kind: string, raw: Buffer): Buffer {
  const typeMeta = Buffer.concat([pbField(1, apiVersion), pbField(2, kind)]);
  return Buffer.concat([
    Buffer.from([0x6b, 0x38, 0x73, 0x00]),
    pbField(1, typeMeta),
    pbField(2, raw),
    pbField(3, ''),
    pbField(4, ''),
  ]);
}

/** An ObjectMeta with name, namespace, uid, resourceVersion, generation and a label. */
export function objectMeta(name: string, namespace: string, uid: string, rv: string): Buffer {
  return Buffer.concat([
    pbField(1, name),
    pbField(3, namespace),
    pbField(5, uid),
    pbField(6, rv),
    pbVarint(7, 1),
    pbField(11, Buffer.concat([pbField(1, 'app'), pbField(2, 'x')])),
  ]);
}
