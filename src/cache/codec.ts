/**
 * The cache's request codec in one object: selector parsers, the LIST encoders (objects,
 * PartialObjectMetadataList) and the continue token decoder, as the server consumes them (structurally `server/cache-api.ts` `CacheCodec`).
 */
import { decodeContinue } from '../apimachinery/continue-token.ts';
import { parseFieldSelector, parseLabelSelector } from '../apimachinery/selectors.ts';
import { encodeList } from './encoding.ts';
import { encodeMetadataList } from './metadata-view.ts';

export const cacheCodec = {
  parseLabelSelector,
  parseFieldSelector,
  encodeList,
  encodeMetadataList,
  decodeContinue,
};
