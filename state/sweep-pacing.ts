import { InvalidOptionError } from '../core/errors.js';

/** How widely a sweep of the seen-set's exact layer spreads its merges (see `ExactFingerprints`). */
export interface SweepPacingOptions {
  /** A sweep merges every block within at least this many new fingerprints. Default 65,536. */
  readonly minSweep?: number;
  /**
   * ... or within this fraction of the stored count, if more, but never more than `maxSweep` (RAM:
   * about half a span waits unmerged at a time, ~11 bytes per fingerprint of the span). Default 1:
   * each fingerprint is rewritten ~1.4 times.
   */
  readonly sweepFraction?: number;
  /** The most new fingerprints a sweep may wait for (caps the RAM above, but see the next). Default 2^24 (~16.8 M, ~176 MiB). */
  readonly maxSweep?: number;
  /**
   * ... unless this fraction of the stored count is more: a sweep may always wait for it, so a
   * full sweep's rewrite of every block is spread over at least count × this many new
   * fingerprints and an admit writes at most ~8 / fraction bytes of blocks, however large the
   * partition (RAM: ~11 bytes per fingerprint of the span, i.e. ~0.9 B per stored one at 1/12).
   * 0 keeps `maxSweep` a hard cap. Default 1/12: above ~201 M fingerprints the span grows with
   * the count (33 M at 400 M, 83 M at 1 B).
   */
  readonly minSweepFraction?: number;
}

/**
 * The sweep span at a count: max(minSweep, min(maxSweep, sweepFraction × count), minSweepFraction ×
 * count) new fingerprints, within which a full sweep merges every block. It trades the bytes a
 * new fingerprint costs in block rewrites (~8 × count / span) against the fingerprints waiting
 * unmerged in RAM (about half a span). Options are validated eagerly; immutable.
 */
export class SweepPacing {
  readonly minSweep: number;
  readonly maxSweep: number;
  readonly sweepFraction: number;
  readonly minSweepFraction: number;

  constructor(options: SweepPacingOptions) {
    this.minSweep = options.minSweep ?? 65_536;
    this.maxSweep = options.maxSweep ?? 2 ** 24;
    this.sweepFraction = options.sweepFraction ?? 1;
    this.minSweepFraction = options.minSweepFraction ?? 1 / 12;
    if (!Number.isInteger(this.minSweep) || this.minSweep < 1)
      throw new InvalidOptionError(`minSweep must be a positive integer, got ${this.minSweep}`);
    if (!Number.isInteger(this.maxSweep) || this.maxSweep < this.minSweep)
      throw new InvalidOptionError(`maxSweep must be an integer >= minSweep (${this.minSweep}), got ${this.maxSweep}`);
    if (!(this.sweepFraction > 0 && this.sweepFraction <= 1))
      throw new InvalidOptionError(`sweepFraction must be in (0, 1], got ${this.sweepFraction}`);
    if (!(this.minSweepFraction >= 0 && this.minSweepFraction <= this.sweepFraction))
      throw new InvalidOptionError(
        `minSweepFraction must be in [0, sweepFraction (${this.sweepFraction})], got ${this.minSweepFraction}`,
      );
  }

  /** New fingerprints within which a full sweep completes, at `count` recorded. */
  span(count: number): number {
    const capped = Math.min(this.maxSweep, count * this.sweepFraction);
    return Math.max(this.minSweep, capped, Math.floor(count * this.minSweepFraction));
  }
}
