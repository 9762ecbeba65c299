/** A lead this long or more is a stalled pipeline (a rebalance, a fetcher restoring), not a delivery time to plan for. */
export const MAX_DELIVERY_LEAD_MS = 5_000;
/** A lead raised by a late lease halves every this long without another, so a pipeline that sped up is used again. */
export const DELIVERY_LEAD_HALF_LIFE_MS = 30_000;
/** Added to the delivery time a late lease took: at least this, else a quarter of it. */
const LEAD_MARGIN_MS = 100;

/**
 * How far ahead of its issue a lease with a short start window (Kafka's per-address slots: half of IP_START_WINDOW_MS)
 * must be planned to start, so that it reaches its fetcher before the window closes. On Kafka a
 * lease reaches the fetcher only once the frontier's transaction is committed and read: up to a
 * commit interval plus the commit's own time plus a poll, most of a second on a loaded machine,
 * where a lease planned at the next slot arrived after its window and was dropped unfetched
 * (three leases in four in a real-pages crawl: docs/BENCHMARKS.md, "Tenth sitting").
 *
 * Learned from the leases that came late, with no engine setting to keep in step: 0 until one
 * does, then what that one took plus a margin (at most {@link MAX_DELIVERY_LEAD_MS}), halving
 * every {@link DELIVERY_LEAD_HALF_LIFE_MS} unless a later one needs more. So a crawl whose leases
 * arrive in time (one process, or a quick cluster) never plans ahead, and one that slows learns
 * again from its first late leases. Only later starts follow from it: the gaps are kept by the
 * slots, whatever the lead. Per frontier task; in memory (a restart learns again).
 */
export class DeliveryLead {
  private peakMs = 0;
  private peakAt = 0;

  /** The lead at `now` (ms, ≥ 0): the last raise, halved for every half-life since. */
  at(now: number): number {
    if (this.peakMs === 0) return 0;
    const lead = this.peakMs * 2 ** (-Math.max(0, now - this.peakAt) / DELIVERY_LEAD_HALF_LIFE_MS);
    if (lead < 1) this.peakMs = 0;
    return Math.round(lead);
  }

  /**
   * A lease issued at `issuedAt` reached its fetcher at `arrivedAt`, past its window (both on the
   * frontier's clock; the fetcher maps its own). Raises the lead to cover it; a time that is not a
   * positive number is ignored.
   */
  late(issuedAt: number, arrivedAt: number, now: number): void {
    const took = arrivedAt - issuedAt;
    if (!(took > 0)) return;
    const want = Math.min(MAX_DELIVERY_LEAD_MS, Math.round(took + Math.max(LEAD_MARGIN_MS, took / 4)));
    if (want <= this.at(now)) return;
    this.peakMs = want;
    this.peakAt = now;
  }
}
