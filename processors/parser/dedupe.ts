import type { KeyValueStore } from '../../state/state-store.js';
import type { Serde } from '../../core/serde.js';
import { bufferSerde, stringSerde } from '../../core/serde.js';
import { keyValueStore, type StoreBuilder } from '../../state/store-builder.js';
import { NearDupIndex } from './near-dup-index.js';

/**
 * Payload digest → the first record of that payload anywhere in the crawl. Changelogged. Lives
 * with the payload-keyed half of the parser: `fetched` is keyed by payload digest, so every copy
 * of a payload meets the first one in the same partition, whatever sites they are on.
 */
export const DIGESTS_STORE = 'parser-digests';
/** Per-site SimHash index (see near-dup-index.ts). Changelogged; lives with the site-keyed half. */
export const SIMHASH_STORE = 'parser-site-simhash';
/**
 * Payload digest → the original that copies of the payload are aliases of: the URL of the
 * payload's first record, or the page that one was found a near copy of. Changelogged; lives
 * with the site-keyed half, in the partition of the first record's site.
 */
export const ORIGINALS_STORE = 'parser-originals';

/** The first record seen with a given payload: what a later copy's revisit refers to. */
export interface DigestEntry {
  /** URL whose response record holds the payload. */
  url: string;
  /** Its site, where its near-duplicate verdict is kept (absent in entries written before sites were kept). */
  site?: string;
  /** Its fetch time (= that record's WARC-Date), epoch ms. */
  fetchedAt: number;
  /** WARC-Record-ID of its response record. */
  recordId: string;
  /** No longer written (always null): the near-duplicate verdict is the site-keyed half's (ORIGINALS_STORE). */
  duplicateOf: string | null;
  /** Its SimHash as 16 hex digits, when it had one. */
  simhash: string | null;
  /** What its body said, for copies that are not parsed again (absent in older entries and when not HTML). */
  charset?: string;
  /** Its `<html lang>`. */
  lang?: string;
  /** Its meta robots said noindex. */
  metaNoindex?: boolean;
  /**
   * Bytes of its payload; written by `replay reparse` only (its scratch index), for copies whose
   * revisit record stores no payload. The live parser knows the copy's own body.
   */
  contentLength?: number;
}

/** JSON: small, self-describing, and a field added later reads as undefined in old entries. */
export const digestEntrySerde: Serde<DigestEntry> = {
  serialize: (v) => Buffer.from(JSON.stringify(v), 'utf8'),
  deserialize: (b) => JSON.parse(b.toString('utf8')) as DigestEntry,
};

export type DigestStore = KeyValueStore<string, DigestEntry>;
export type SimhashStore = KeyValueStore<Buffer, Buffer>;
export type OriginalsStore = KeyValueStore<string, string>;

/** The parser's duplicate-detection stores (both halves), to add to the parser in the topology. */
export function dedupeStores(): StoreBuilder[] {
  return [
    keyValueStore(DIGESTS_STORE, stringSerde, digestEntrySerde),
    keyValueStore(SIMHASH_STORE, bufferSerde, bufferSerde),
    keyValueStore(ORIGINALS_STORE, stringSerde, stringSerde),
  ];
}

/**
 * Exact duplicates, for the payload-keyed half: the first record archived with a payload is the
 * one every later record with the same payload digest becomes a revisit of.
 */
export class PayloadIndex {
  constructor(private readonly digests: DigestStore) {}

  /** The first record archived with this payload, if any (possibly an earlier fetch of the same URL). */
  firstRecord(payloadDigest: string): DigestEntry | undefined {
    return this.digests.get(payloadDigest);
  }

  /** Remembers the first record of a payload; a payload already known keeps its first record. */
  recordFirst(payloadDigest: string, entry: DigestEntry): void {
    if (this.digests.get(payloadDigest) === undefined) this.digests.put(payloadDigest, entry);
  }
}

/**
 * Near duplicates and the originals of payloads, for the site-keyed half: SimHash within
 * NEAR_DUP_BITS of a page of the same site indexed before, and, per payload whose first record
 * was on one of this partition's sites, the original its copies are aliases of.
 */
export class SiteDuplicates {
  private readonly index: NearDupIndex;

  constructor(
    simhashes: SimhashStore,
    private readonly originals: OriginalsStore,
  ) {
    this.index = new NearDupIndex(simhashes);
  }

  /** Bytes of SimHashes held in RAM (bounded: see NearDupIndex). */
  get cacheBytes(): number {
    return this.index.cacheBytes;
  }

  /** The original of the closest page of `site` within NEAR_DUP_BITS of `simhash`, other than `url` itself. */
  nearCopy(site: string, simhash: Buffer, url: string): { original: string; distance: number } | undefined {
    const match = this.index.find(site, simhash);
    if (match === undefined || match.url === url) return undefined;
    return { original: match.url, distance: match.distance };
  }

  /** Indexes an original (a page that is no copy) so later pages of its site can be found near it. */
  addOriginal(site: string, simhash: Buffer, url: string): void {
    this.index.add(site, simhash, url);
  }

  /** The original that copies of a payload are aliases of, once its first record was seen here. */
  originalOf(payloadDigest: string): string | undefined {
    return this.originals.get(payloadDigest);
  }

  /** Remembers, for the first record of a payload, the original its copies are aliases of. */
  setOriginal(payloadDigest: string, original: string): void {
    if (this.originals.get(payloadDigest) === undefined) this.originals.put(payloadDigest, original);
  }
}
