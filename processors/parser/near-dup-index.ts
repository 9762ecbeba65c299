import type { KeyValueStore } from '../../state/state-store.js';
import { hammingDistance, popcount32 } from './simhash.js';

/** Two SimHashes this close (differing bits) are near-duplicates. */
export const NEAR_DUP_BITS = 3;

// the 64 bits as 6 blocks, most significant first; any two SimHashes within 3 bits agree on at
// least 3 whole blocks, so one of the C(6,3) = 20 tables below keys them alike
const BLOCK_SIZES = [11, 11, 11, 11, 10, 10] as const;
const BLOCK_SHIFTS = BLOCK_SIZES.map((_, i) => BLOCK_SIZES.slice(i + 1).reduce((s, n) => s + n, 0));

interface Table {
  /** Blocks in the order they are laid out in the permuted key: the 3 leading blocks first. */
  order: number[];
  /** Bits of the permuted key that must match exactly: the 3 leading blocks. */
  prefixBits: number;
}

/** The 20 tables: every choice of 3 leading blocks out of 6, the rest following in order. */
export const TABLES: readonly Table[] = (() => {
  const out: Table[] = [];
  for (let a = 0; a < 6; a++) {
    for (let b = a + 1; b < 6; b++) {
      for (let c = b + 1; c < 6; c++) {
        const lead = [a, b, c];
        const rest = [0, 1, 2, 3, 4, 5].filter((x) => !lead.includes(x));
        out.push({ order: [...lead, ...rest], prefixBits: BLOCK_SIZES[a]! + BLOCK_SIZES[b]! + BLOCK_SIZES[c]! });
      }
    }
  }
  return out;
})();

/** A SimHash with its blocks laid out in the table's order: a bit permutation, so distances are kept. */
export function permute(simhash: bigint, table: Table): bigint {
  let out = 0n;
  for (const block of table.order) {
    const size = BigInt(BLOCK_SIZES[block]!);
    out = (out << size) | ((simhash >> BigInt(BLOCK_SHIFTS[block]!)) & ((1n << size) - 1n));
  }
  return out;
}

/** Store key of one table entry: the site (UTF-8), 0, table number (1 byte), the permuted SimHash (8 bytes, big-endian). */
function entryKey(scope: Buffer, table: number, permuted: bigint): Buffer {
  const key = Buffer.allocUnsafe(scope.length + 9);
  scope.copy(key);
  key[scope.length] = table;
  key.writeBigUInt64BE(permuted, scope.length + 1);
  return key;
}

/** The key prefix of a site's entries: its name and a 0 byte, which no site name contains. */
function scopeOf(site: string): Buffer {
  return Buffer.from(site + '\0', 'utf8');
}

export interface NearDupMatch {
  /** The indexed SimHash (original bit order). */
  simhash: Buffer;
  /** What was indexed with it: the original page's URL. */
  url: string;
  distance: number;
}

/**
 * Sites with at most this many indexed SimHashes are searched in RAM, one by one, and stored in
 * table 0 only; larger ones by the 20 range scans. May be raised between versions, never lowered:
 * a site below the old bound has no other tables.
 */
export const LINEAR_MAX = 4_096;
/** SimHashes held in RAM over all sites; beyond it the least recently used sites are dropped (and reloaded when needed). */
const CACHE_MAX = 2_000_000;

/** A site's indexed SimHashes in RAM (high and low 32 bits), or LARGE: too many, ask the store. */
type SiteHashes = { hi: number[]; lo: number[] } | typeof LARGE;
const LARGE = 'large';

/**
 * The 6-block / 20-table index of Manku, Jain and Das Sarma (WWW 2007) over 64-bit SimHashes, one
 * per site, in a changelogged store, so it survives restarts and moves with its partition. A site
 * of at most LINEAR_MAX SimHashes keeps each one once, in the first table (whose order is the
 * identity), and is searched in RAM, loaded once from that table and compared one by one: one
 * store write a page instead of 20, and no range scans. A larger site keeps each SimHash 20 times,
 * once per table, under its site and permuted form (the add that makes it large writes the other
 * 19 tables of all it holds); a query reads, per table, the sorted run of the site's keys sharing
 * its 3 leading blocks (one range scan each) and checks the distance of every candidate. Finds
 * every SimHash indexed for the site within NEAR_DUP_BITS of the query, and none of another site's.
 *
 * The RAM copy follows this instance's own writes, so it holds only while the store's pending
 * writes are committed or the instance is dropped with them: the runtime builds new processors
 * (and so a new index) whenever it discards a task's uncommitted writes.
 */
export class NearDupIndex {
  private readonly sites = new Map<string, SiteHashes>();
  private cached = 0;

  /** `linearMax`, `cacheMax`: see LINEAR_MAX and CACHE_MAX (smaller in tests). */
  constructor(
    private readonly store: KeyValueStore<Buffer, Buffer>,
    private readonly linearMax = LINEAR_MAX,
    private readonly cacheMax = CACHE_MAX,
  ) {}

  /** About what the RAM copy holds: 16 bytes a SimHash (two doubles) and ~150 a site (at most CACHE_MAX SimHashes). */
  get cacheBytes(): number {
    return 16 * this.cached + 150 * this.sites.size;
  }

  /** The closest SimHash indexed for `site` within NEAR_DUP_BITS bits (the first found on ties), or undefined. */
  find(site: string, simhash: Buffer): NearDupMatch | undefined {
    const hashes = this.hashesOf(site);
    if (hashes === LARGE) return this.findInStore(site, simhash);
    const qhi = simhash.readUInt32BE(0);
    const qlo = simhash.readUInt32BE(4);
    let best = -1;
    let bestDistance = NEAR_DUP_BITS + 1;
    for (let i = 0; i < hashes.hi.length; i++) {
      const d = popcount32(hashes.hi[i]! ^ qhi) + popcount32(hashes.lo[i]! ^ qlo);
      if (d >= bestDistance) continue;
      best = i;
      bestDistance = d;
      if (d === 0) break;
    }
    if (best < 0) return undefined;
    const found = Buffer.allocUnsafe(8);
    found.writeUInt32BE(hashes.hi[best]!, 0);
    found.writeUInt32BE(hashes.lo[best]!, 4);
    const url = this.store.get(entryKey(scopeOf(site), 0, permute(found.readBigUInt64BE(0), TABLES[0]!)));
    // the RAM copy and the store disagree only if the store was changed behind this index's back
    if (url === undefined) return this.findInStore(site, simhash);
    return { simhash: found, url: url.toString('utf8'), distance: bestDistance };
  }

  /**
   * Indexes `simhash` for `url` of `site`: one store write while the site is small, 20 once it is
   * large (and, on the add that makes it large, the 19 other tables of every SimHash it holds).
   * Idempotent: indexing it again changes nothing but the URL.
   */
  add(site: string, simhash: Buffer, url: string): void {
    const scope = scopeOf(site);
    const value = simhash.readBigUInt64BE(0);
    const urlBytes = Buffer.from(url, 'utf8');
    const hashes = this.hashesOf(site);
    if (hashes === LARGE) {
      for (let t = 0; t < TABLES.length; t++) this.store.put(entryKey(scope, t, permute(value, TABLES[t]!)), urlBytes);
      return;
    }
    this.store.put(entryKey(scope, 0, permute(value, TABLES[0]!)), urlBytes);
    const hi = simhash.readUInt32BE(0);
    const lo = simhash.readUInt32BE(4);
    for (let i = 0; i < hashes.hi.length; i++) if (hashes.hi[i] === hi && hashes.lo[i] === lo) return;
    if (hashes.hi.length >= this.linearMax) {
      this.buildTables(scope);
      this.sites.set(site, LARGE);
      this.cached -= hashes.hi.length - 1;
      return;
    }
    hashes.hi.push(hi);
    hashes.lo.push(lo);
    this.cached++;
    this.evict();
  }

  /** Writes tables 1–19 for every SimHash in the site's table 0 (pending writes included). */
  private buildTables(scope: Buffer): void {
    const entries = [...this.store.range(entryKey(scope, 0, 0n), Buffer.concat([scope, Buffer.from([1])]))];
    for (const [key, url] of entries) {
      const value = key.readBigUInt64BE(scope.length + 1); // table 0 keeps the original bit order
      for (let t = 1; t < TABLES.length; t++) this.store.put(entryKey(scope, t, permute(value, TABLES[t]!)), url);
    }
  }

  /** The site's SimHashes in RAM, loaded from the store on first use; marks the site most recently used. */
  private hashesOf(site: string): SiteHashes {
    const known = this.sites.get(site);
    if (known !== undefined) {
      this.sites.delete(site);
      this.sites.set(site, known);
      return known;
    }
    const scope = scopeOf(site);
    const hi: number[] = [];
    const lo: number[] = [];
    let loaded: SiteHashes = { hi, lo };
    for (const [key] of this.store.range(
      entryKey(scope, 0, 0n),
      Buffer.concat([scope, Buffer.from([1])]),
      this.linearMax + 1,
    )) {
      if (hi.length >= this.linearMax) {
        loaded = LARGE;
        break;
      }
      const h = unpermuteKey(key.readBigUInt64BE(scope.length + 1), TABLES[0]!);
      hi.push(h.readUInt32BE(0));
      lo.push(h.readUInt32BE(4));
    }
    this.sites.set(site, loaded);
    this.cached += loaded === LARGE ? 1 : Math.max(1, hi.length);
    this.evict();
    return loaded;
  }

  /** Drops least recently used sites while more than cacheMax SimHashes are held (never the last one used). */
  private evict(): void {
    while (this.cached > this.cacheMax && this.sites.size > 1) {
      const [oldest, hashes] = this.sites.entries().next().value as [string, SiteHashes];
      this.sites.delete(oldest);
      this.cached -= hashes === LARGE ? 1 : Math.max(1, hashes.hi.length);
    }
  }

  /** `find` by the 20 range scans over the store. */
  private findInStore(site: string, simhash: Buffer): NearDupMatch | undefined {
    const scope = scopeOf(site);
    const value = simhash.readBigUInt64BE(0);
    let best: NearDupMatch | undefined;
    const candidate = Buffer.allocUnsafe(8);
    for (let t = 0; t < TABLES.length; t++) {
      const table = TABLES[t]!;
      const permuted = permute(value, table);
      const low = 64n - BigInt(table.prefixBits);
      const prefix = permuted >> low;
      const from = entryKey(scope, t, prefix << low);
      const last = (1n << BigInt(table.prefixBits)) - 1n;
      const to =
        prefix === last ? Buffer.concat([scope, Buffer.from([t + 1])]) : entryKey(scope, t, (prefix + 1n) << low);
      candidate.writeBigUInt64BE(permuted);
      for (const [key, url] of this.store.range(from, to)) {
        const distance = hammingDistance(candidate, key.subarray(scope.length + 1));
        if (distance > NEAR_DUP_BITS || (best !== undefined && best.distance <= distance)) continue;
        best = {
          simhash: unpermuteKey(key.readBigUInt64BE(scope.length + 1), table),
          url: url.toString('utf8'),
          distance,
        };
        if (distance === 0) return best;
      }
    }
    return best;
  }
}

function unpermuteKey(permuted: bigint, table: Table): Buffer {
  let rest = 64n;
  let out = 0n;
  for (const block of table.order) {
    const size = BigInt(BLOCK_SIZES[block]!);
    rest -= size;
    out |= ((permuted >> rest) & ((1n << size) - 1n)) << BigInt(BLOCK_SHIFTS[block]!);
  }
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64BE(out);
  return b;
}
