/**
 * A lease's id, `EPOCH-PARTITION-N` (N in base 36): unique across the frontier's partitions, its
 * owners (a new owner's epoch is higher) and restarts. The fetcher reads the partition back
 * (`leaseIssuer`): one fetcher task takes leases of many frontier partitions (fetch requests are
 * keyed by address), each with its own epochs and clock.
 */
export function leaseIdOf(epoch: number, partition: number, n: number): string {
  return `${epoch}-${partition}-${n.toString(36)}`;
}

/** The frontier partition that issued lease `id`, as written by `leaseIdOf`; '' for an id of another form. */
export function leaseIssuer(id: string): string {
  const first = id.indexOf('-');
  const second = first < 0 ? -1 : id.indexOf('-', first + 1);
  return second < 0 ? '' : id.slice(first + 1, second);
}
