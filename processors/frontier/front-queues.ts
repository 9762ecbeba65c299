import type { KeyValueStore } from '../../state/state-store.js';
import type { FrontEntry } from '../../schemas/types.js';

/** Priority bands, most urgent first: seeds (and due recrawls), important, normal, suspect. */
export const BANDS = ['seed', 'important', 'normal', 'suspect'] as const;
export type Band = 0 | 1 | 2 | 3;
/** A low band still trickles: out of every 15 picks, 8 / 4 / 2 / 1 go to bands 0..3 when all have URLs. */
const WEIGHTS = [8, 4, 2, 1];

export interface FrontKey {
  band: number;
  seq: number;
}

export const frontKeyCodec = {
  encode: ({ band, seq }: FrontKey): Buffer => {
    const b = Buffer.allocUnsafe(9);
    b[0] = band;
    b.writeBigUInt64BE(BigInt(seq), 1);
    return b;
  },
  decode: (b: Buffer): FrontKey => ({ band: b[0]!, seq: Number(b.readBigUInt64BE(1)) }),
};

/** The band a URL starts in: seeds first; shallow pages important; trap-like URLs suspect. */
export function bandOf(url: string, depth: number): Band {
  if (depth === 0) return 0;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 3;
  }
  const params = u.search.length > 1 ? u.search.slice(1).split('&').length : 0;
  const segments = u.pathname.split('/').filter(Boolean).length;
  if (params > 3 || url.length > 300 || segments > 8 || depth > 10) return 3;
  if (depth <= 2) return 1;
  return 2;
}

/**
 * Mercator front queues of one frontier task: one on-disk FIFO per band (store `frontier-front`,
 * bounds in memory and in `frontier-meta`). URLs wait here until their host gets an active slot.
 */
export class FrontQueues {
  private readonly heads = [0, 0, 0, 0];
  private readonly tails = [0, 0, 0, 0];
  private credits = [...WEIGHTS];

  constructor(
    private readonly store: KeyValueStore<FrontKey, FrontEntry>,
    private readonly readBound: (name: string) => number,
    private readonly writeBound: (name: string, value: number) => void,
  ) {
    for (let b = 0; b < 4; b++) {
      this.heads[b] = readBound(`front-head-${b}`);
      this.tails[b] = readBound(`front-tail-${b}`);
    }
  }

  get size(): number {
    let n = 0;
    for (let b = 0; b < 4; b++) n += this.tails[b]! - this.heads[b]!;
    return n;
  }

  push(band: Band, entry: FrontEntry): void {
    this.store.put({ band, seq: this.tails[band]! }, entry);
    this.tails[band]!++;
    this.writeBound(`front-tail-${band}`, this.tails[band]!);
  }

  /** The next URL by biased selection across bands, removed from its queue; undefined when all are empty. */
  pop(): FrontEntry | undefined {
    for (let tries = 0; tries < 2; tries++) {
      for (let b = 0; b < 4; b++) {
        if (this.credits[b]! <= 0 || this.heads[b]! >= this.tails[b]!) continue;
        this.credits[b]!--;
        return this.take(b);
      }
      // every non-empty band spent its credit: a new round
      this.credits = [...WEIGHTS];
    }
    return undefined;
  }

  private take(band: number): FrontEntry | undefined {
    while (this.heads[band]! < this.tails[band]!) {
      const key = { band, seq: this.heads[band]! };
      const entry = this.store.get(key);
      this.store.delete(key);
      this.heads[band]!++;
      this.writeBound(`front-head-${band}`, this.heads[band]!);
      if (entry) return entry;
    }
    return undefined;
  }
}
