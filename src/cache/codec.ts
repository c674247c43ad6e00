/**
 * The cache's request codec in one object: selector parsers, the LIST encoder (objects, or the
 * PartialObjectMetadataList) and the continue token decoder, as the server consumes them
 * (structurally `server/cache-api.ts` `CacheCodec`).
 */
import type { MetadataVersion } from '../apimachinery/accept.ts';
import { decodeContinue } from '../apimachinery/continue-token.ts';
import type { ResourceInfo } from '../apimachinery/gvr.ts';
import type { ItemsBody } from '../apimachinery/list-items.ts';
import { parseFieldSelector, parseLabelSelector } from '../apimachinery/selectors.ts';
import { encodeList, type ListResult } from './encoding.ts';
import { encodeMetadataList } from './metadata-view.ts';

export const cacheCodec = {
  parseLabelSelector,
  parseFieldSelector,
  /** Objects (`encodeList`), or with `metadata` the PartialObjectMetadataList (`encodeMetadataList`). */
  encodeList: (resource: ResourceInfo, r: ListResult, metadata?: MetadataVersion): ItemsBody =>
    metadata === undefined ? encodeList(resource, r) : encodeMetadataList(metadata, r),
  decodeContinue,
};
