/** Random request paths for the label-cardinality tests (issue 29). */

/** A random resource path: group (or core), version, namespace or not, resource, name and subresource. */
export function randomResourcePath(rand: () => number): string {
  const word = () => Math.floor(rand() * 36 ** 6).toString(36);
  const root = rand() < 0.3 ? '/api/v1' : `/apis/${word()}.example.com/v${1 + Math.floor(rand() * 3)}`;
  const ns = rand() < 0.5 ? `/namespaces/${word()}` : '';
  const sub = rand() < 0.5 ? `/${word()}/${word()}` : rand() < 0.5 ? `/${word()}` : '';
  return `${root}${ns}/${word()}${sub}`;
}
