/**
 * The assignment of one consumer group (one sub-topology): partition *p* of every source topic
 * goes to the same member, since a task is the unit of state (its stores hold partition *p* of
 * every input). Sticky: a member keeps the partitions it owned before (what it reports when it
 * joins) as long as the balance allows, so a rebalance moves only the partitions it must and a
 * restarted member gets back the tasks whose state it still has on disk. A partition that must
 * move goes, balance allowing, to a member with a warm copy of its state (a standby, or state
 * left from an earlier assignment): its task then restores only the tail, like Kafka Streams'
 * HighAvailabilityTaskAssignor placing an active task on a caught-up client.
 *
 * Balance: every member gets ⌊P/M⌋ or ⌈P/M⌉ partitions (P partition numbers, M members).
 * Deterministic for the same input (members sorted by id), so every leader computes the same.
 */
export interface AssignmentMember {
  readonly memberId: string;
  /** Partition numbers it owned in the previous generation (may be stale or claimed by another too). */
  readonly owned: readonly number[];
  /** Partition numbers it holds a local copy of without owning them (standbys, state left on disk); none when absent. */
  readonly warm?: readonly number[];
}

/** What a group's leader hands out: each member's active partitions, and those it keeps a standby of. */
export interface AssignmentPlan {
  /** memberId → the partitions it runs; every member appears, perhaps with none. */
  readonly active: Map<string, number[]>;
  /** memberId → the partitions it follows as a standby (never one it runs); every member appears. */
  readonly standby: Map<string, number[]>;
}

/** memberId → the partition numbers it gets; every member appears, perhaps with none. */
export function coPartitionedAssignment(
  members: readonly AssignmentMember[],
  partitions: number,
): Map<string, number[]> {
  return planAssignment(members, partitions, 0).active;
}

/**
 * The active partitions as `coPartitionedAssignment` deals them, and `standbyReplicas` standbys
 * of each partition on members other than its active one (fewer when the group has fewer other
 * members), Kafka Streams' `num.standby.replicas`. A standby stays where a warm copy is (sticky),
 * else goes to the member with the fewest standbys.
 */
export function planAssignment(
  members: readonly AssignmentMember[],
  partitions: number,
  standbyReplicas: number,
): AssignmentPlan {
  const sorted = [...members].sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0));
  const active = new Map<string, number[]>(sorted.map((m) => [m.memberId, []]));
  const standby = new Map<string, number[]>(sorted.map((m) => [m.memberId, []]));
  if (sorted.length === 0) return { active, standby };
  const floor = Math.floor(partitions / sorted.length);
  // the first `extra` members to fill up may take one more than the floor
  let extra = partitions % sorted.length;
  const ownerOf = new Map<number, string>();
  const quota = (n: number): boolean => n < floor || (n === floor && extra > 0);
  const give = (memberId: string, p: number): void => {
    const list = active.get(memberId)!;
    if (list.length === floor) extra--;
    list.push(p);
    ownerOf.set(p, memberId);
  };
  // keep what each member owned, up to the balance; a partition two members claim goes to the first
  for (const m of sorted) {
    for (const p of [...new Set(m.owned)].sort((a, b) => a - b)) {
      if (p < 0 || p >= partitions || ownerOf.has(p)) continue;
      if (!quota(active.get(m.memberId)!.length)) break;
      give(m.memberId, p);
    }
  }
  const warm = new Map(sorted.map((m) => [m.memberId, new Set(m.warm ?? [])]));
  // the fewest partitions (then member order) among `candidates` with room under the balance
  const fewest = (candidates: readonly AssignmentMember[]): string | undefined => {
    let best: string | undefined;
    for (const m of candidates) {
      const n = active.get(m.memberId)!.length;
      if (!quota(n)) continue;
      if (best === undefined || n < active.get(best)!.length) best = m.memberId;
    }
    return best;
  };
  // the rest: to a member with a warm copy when the balance allows, else to the one with the fewest
  for (let p = 0; p < partitions; p++) {
    if (ownerOf.has(p)) continue;
    give(fewest(sorted.filter((m) => warm.get(m.memberId)!.has(p))) ?? fewest(sorted)!, p);
  }
  for (const list of active.values()) list.sort((a, b) => a - b);
  const replicas = Math.min(Math.max(0, Math.floor(standbyReplicas)), sorted.length - 1);
  for (let p = 0; p < partitions && replicas > 0; p++) {
    const candidates = sorted
      .filter((m) => m.memberId !== ownerOf.get(p))
      .map((m, order) => ({ id: m.memberId, warm: warm.get(m.memberId)!.has(p) || m.owned.includes(p), order }))
      .sort(
        (a, b) =>
          Number(b.warm) - Number(a.warm) || standby.get(a.id)!.length - standby.get(b.id)!.length || a.order - b.order,
      );
    for (const c of candidates.slice(0, replicas)) standby.get(c.id)!.push(p);
  }
  evenOut(standby, ownerOf);
  for (const list of standby.values()) list.sort((a, b) => a - b);
  return { active, standby };
}

/**
 * Moves standbys from the member with the most to the one with the fewest until their counts
 * differ by at most one or no move is allowed (a member never keeps a standby of a partition it
 * runs or keeps already). Greedy placement leaves such gaps when late partitions find the members
 * with the fewest standbys running them.
 */
function evenOut(standby: Map<string, number[]>, ownerOf: ReadonlyMap<number, string>): void {
  for (let moves = 0; moves < 10_000; moves++) {
    let hi: string | undefined;
    let lo: string | undefined;
    for (const [m, list] of standby) {
      if (hi === undefined || list.length > standby.get(hi)!.length) hi = m;
      if (lo === undefined || list.length < standby.get(lo)!.length) lo = m;
    }
    const his = standby.get(hi!)!;
    const los = standby.get(lo!)!;
    if (his.length - los.length <= 1) return;
    const i = his.findIndex((p) => ownerOf.get(p) !== lo && !los.includes(p));
    if (i < 0) return;
    los.push(his.splice(i, 1)[0]!);
  }
}
