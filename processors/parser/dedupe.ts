import type { Codec, KeyValueStore } from '../../state/state-store.js';
import { bufferCodec, stringCodec } from '../../state/state-store.js';
import { keyValueStore, type StoreBuilder } from '../../state/store-builder.js';
import { NearDupIndex } from './near-dup-index.js';

/** Payload digest (`sha1:BASE32`) → the first record with that payload. Changelogged. */
export const DIGESTS_STORE = 'parser-digests';
/** The 20 tables of the near-duplicate index (see near-dup-index.ts). Changelogged. */
export const SIMHASH_STORE = 'parser-simhash';

/** The first page seen with a given payload: what a later copy becomes an alias of. */
export interface DigestEntry {
  /** URL whose response record holds the payload. */
  url: string;
  /** Its fetch time (= that record's WARC-Date), epoch ms. */
  fetchedAt: number;
  /** WARC-Record-ID of its response record. */
  recordId: string;
  /** When that page was itself a near-duplicate: the original it is an alias of. */
  duplicateOf: string | null;
  /** Its SimHash as 16 hex digits, when it had one. */
  simhash: string | null;
}

/** JSON: small, self-describing, and a field added later reads as undefined in old entries. */
export const digestEntryCodec: Codec<DigestEntry> = {
  encode: (v) => Buffer.from(JSON.stringify(v), 'utf8'),
  decode: (b) => JSON.parse(b.toString('utf8')) as DigestEntry,
};

export type DigestStore = KeyValueStore<string, DigestEntry>;
export type SimhashStore = KeyValueStore<Buffer, Buffer>;

/** The parser's duplicate-detection stores, to add to the parser in the topology. */
export function dedupeStores(): StoreBuilder[] {
  return [keyValueStore(DIGESTS_STORE, stringCodec, digestEntryCodec), keyValueStore(SIMHASH_STORE, bufferCodec, bufferCodec)];
}

/** What the parser does with a page that is a copy. */
export type CopyVerdict =
  | { kind: 'exact'; of: DigestEntry; original: string }
  | { kind: 'near'; original: string; distance: number };

/**
 * Duplicate detection for one parser partition: exact payload digest first, then SimHash
 * (≤ NEAR_DUP_BITS differing bits). The first page of a payload or of a near-duplicate cluster is
 * the original; later ones are copies, aliases of it. Only 2xx responses with a body take part.
 */
export class Deduplicator {
  private readonly index: NearDupIndex;

  constructor(
    private readonly digests: DigestStore,
    simhashes: SimhashStore,
  ) {
    this.index = new NearDupIndex(simhashes);
  }

  /**
   * The first record with this payload, when it belongs to another URL or an earlier fetch of
   * this one. `original` is the URL the copy is an alias of (the cluster's original, never a copy).
   */
  exactCopy(payloadDigest: string): CopyVerdict & { kind: 'exact' } | undefined {
    const of = this.digests.get(payloadDigest);
    if (of === undefined) return undefined;
    return { kind: 'exact', of, original: of.duplicateOf ?? of.url };
  }

  /** The original of the closest indexed page within NEAR_DUP_BITS of `simhash`, other than `url` itself. */
  nearCopy(simhash: Buffer, url: string): CopyVerdict & { kind: 'near' } | undefined {
    const match = this.index.find(simhash);
    if (match === undefined || match.url === url) return undefined;
    return { kind: 'near', original: match.url, distance: match.distance };
  }

  /**
   * Records a page whose response record was written: its payload digest (so byte-identical
   * copies become revisits of it) and, for an original with a SimHash, its place in the index.
   */
  record(payloadDigest: string, entry: DigestEntry, simhash: Buffer | undefined): void {
    if (this.digests.get(payloadDigest) === undefined) this.digests.put(payloadDigest, entry);
    if (simhash !== undefined && entry.duplicateOf === null) this.index.add(simhash, entry.url);
  }
}
