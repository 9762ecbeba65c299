/**
 * The assignment of one consumer group (one sub-topology): partition *p* of every source topic
 * goes to the same member, since a task is the unit of state (its stores hold partition *p* of
 * every input). Sticky: a member keeps the partitions it owned before (what it reports when it
 * joins) as long as the balance allows, so a rebalance moves only the partitions it must and a
 * restarted member gets back the tasks whose state it still has on disk.
 *
 * Balance: every member gets ⌊P/M⌋ or ⌈P/M⌉ partitions (P partition numbers, M members).
 * Deterministic for the same input (members sorted by id), so every leader computes the same.
 */
export interface AssignmentMember {
  readonly memberId: string;
  /** Partition numbers it owned in the previous generation (may be stale or claimed by another too). */
  readonly owned: readonly number[];
}

/** memberId → the partition numbers it gets; every member appears, perhaps with none. */
export function coPartitionedAssignment(
  members: readonly AssignmentMember[],
  partitions: number,
): Map<string, number[]> {
  const sorted = [...members].sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0));
  const out = new Map<string, number[]>(sorted.map((m) => [m.memberId, []]));
  if (sorted.length === 0) return out;
  const floor = Math.floor(partitions / sorted.length);
  // the first `extra` members to fill up may take one more than the floor
  let extra = partitions % sorted.length;
  const taken = new Set<number>();
  const quota = (n: number): boolean => n < floor || (n === floor && extra > 0);
  const give = (memberId: string, p: number): void => {
    const list = out.get(memberId)!;
    if (list.length === floor) extra--;
    list.push(p);
    taken.add(p);
  };
  // keep what each member owned, up to the balance; a partition two members claim goes to the first
  for (const m of sorted) {
    for (const p of [...new Set(m.owned)].sort((a, b) => a - b)) {
      if (p < 0 || p >= partitions || taken.has(p)) continue;
      if (!quota(out.get(m.memberId)!.length)) break;
      give(m.memberId, p);
    }
  }
  // the rest to the members with the fewest, in member order
  for (let p = 0; p < partitions; p++) {
    if (taken.has(p)) continue;
    let best: string | undefined;
    for (const m of sorted) {
      const n = out.get(m.memberId)!.length;
      if (!quota(n)) continue;
      if (best === undefined || n < out.get(best)!.length) best = m.memberId;
    }
    give(best!, p);
  }
  for (const list of out.values()) list.sort((a, b) => a - b);
  return out;
}
