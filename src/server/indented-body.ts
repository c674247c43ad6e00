/**
 * A JSON answer from the cache written indented, as the apiserver writes it for `pretty=true`,
 * a curl/Wget/browser User-Agent or an Accept clause's `pretty=1` (`delegate.ts` `indentedJson`
 * decides; `apimachinery/go-indent.ts` makes the bytes): the compact answer's pieces indented one
 * at a time as the writer copies them into its batch buffers (`filled-body.ts`), so a big LIST is
 * never held indented in one piece.
 */
import { indentedPieces } from '../apimachinery/go-indent.ts';
import type { FilledBody } from './filled-body.ts';

/**
 * `compact` (a JSON answer's pieces as the compact serializer writes them, final newline
 * included) as Go's `json.MarshalIndent(obj, "", "  ")` writes the same object: its length known
 * up front (a counting pass), its bytes made piece by piece as `fill` asks for them.
 */
export function indentedBody(compact: readonly Buffer[]): FilledBody {
  const pieces = indentedPieces(compact);
  let piece: Buffer | undefined = pieces.next();
  let off = 0;
  return {
    length: pieces.length,
    fill(into: Buffer): number {
      let at = 0;
      while (at < into.length && piece !== undefined) {
        const n = piece.copy(into, at, off);
        at += n;
        off += n;
        if (off === piece.length) {
          piece = pieces.next();
          off = 0;
        }
      }
      return at;
    },
  };
}
