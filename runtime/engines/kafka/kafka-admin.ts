import kafkajs from 'kafkajs';
import type { Admin } from 'kafkajs';
import { isTransientFault, kafkaError, type TopicDefinition } from './kafka-common.js';

/** How long a read waits out a broker fault (a broker down among several, a leader moving) before failing. */
const TRANSIENT_FAULT_MS = 60_000;

/**
 * Topic administration: creation with configs, offsets, committed group offsets. A read that meets
 * a transient broker fault (a connection refused by a broker that is down while the metadata still
 * names it, a leader moving) asks again with back-off for up to a minute, as a Kafka client does;
 * any other failure, or the fault outlasting the minute, is a CrawlError CS_KAFKA at once.
 */
export class KafkaAdmin {
  constructor(
    private readonly admin: Admin,
    private readonly onClose: () => void,
  ) {}

  /** Creates the topics that do not exist yet (existing ones are left alone); returns the names created. */
  async createTopics(topics: readonly TopicDefinition[]): Promise<string[]> {
    const existing = new Set(await this.admin.listTopics());
    const missing = topics.filter((t) => !existing.has(t.name));
    if (missing.length === 0) return [];
    try {
      await this.admin.createTopics({
        // kafkajs' own wait gives up when the broker it asks has not yet heard of the new topics
        // (UNKNOWN_TOPIC_OR_PARTITION, a multi-broker KRaft cluster a moment after its start): awaitLeaders
        waitForLeaders: false,
        topics: missing.map((t) => ({
          topic: t.name,
          numPartitions: t.partitions,
          replicationFactor: t.replicationFactor ?? 1,
          configEntries: Object.entries(t.config).map(([name, value]) => ({ name, value })),
        })),
      });
    } catch (err) {
      throw kafkaError(`cannot create topics ${missing.map((t) => t.name).join(', ')}`, err);
    }
    await this.awaitLeaders(missing.map((t) => t.name));
    return missing.map((t) => t.name);
  }

  /**
   * Resolves once the metadata of every topic in `topics` shows a leader for each partition;
   * retriable answers (a broker that has not heard of a new topic yet, a leader being elected)
   * are asked again with back-off for up to `timeoutMs`, then a CrawlError CS_KAFKA names the
   * topics still without leaders.
   */
  async awaitLeaders(topics: readonly string[], timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let waiting: readonly string[] = topics;
    let lastError: unknown;
    for (let attempt = 0; waiting.length > 0; attempt++) {
      try {
        const meta = await this.admin.fetchTopicMetadata({ topics: [...waiting] });
        const led = new Set(
          meta.topics
            .filter(
              (t) => t.partitions.length > 0 && t.partitions.every((p) => p.partitionErrorCode === 0 && p.leader >= 0),
            )
            .map((t) => t.name),
        );
        waiting = waiting.filter((t) => !led.has(t));
        lastError = undefined;
      } catch (err) {
        if (!notYetKnown(err)) throw kafkaError(`cannot read the metadata of ${waiting.join(', ')}`, err);
        lastError = err;
      }
      if (waiting.length === 0) return;
      if (Date.now() >= deadline)
        throw kafkaError(
          `topics ${waiting.join(', ')} have no leader for every partition after ${timeoutMs} ms`,
          lastError ?? new Error('no leader'),
        );
      await new Promise((r) => setTimeout(r, Math.min(100 * 2 ** attempt, 1_000)));
    }
  }

  async listTopics(): Promise<string[]> {
    return this.asked('cannot list the topics', () => this.admin.listTopics());
  }

  /** Partition count and the named config values of a topic. */
  async describeTopic(
    topic: string,
    configNames: readonly string[],
  ): Promise<{ partitions: number; config: Record<string, string> }> {
    const meta = await this.asked(`cannot read the metadata of ${topic}`, () =>
      this.admin.fetchTopicMetadata({ topics: [topic] }),
    );
    const described = await this.asked(`cannot read the configs of ${topic}`, () =>
      this.admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: 2, name: topic, configNames: [...configNames] }],
      }),
    );
    const config: Record<string, string> = {};
    for (const e of described.resources[0]?.configEntries ?? []) config[e.configName] = e.configValue;
    return { partitions: meta.topics[0]?.partitions.length ?? 0, config };
  }

  /** High watermark of every partition of a topic (the next offset to be written). */
  async endOffsets(topic: string): Promise<Map<number, number>> {
    // right after a topic is created or a leader moves, brokers answer NOT_LEADER until metadata settles
    for (let attempt = 0; ; attempt++) {
      try {
        const offsets = await this.admin.fetchTopicOffsets(topic);
        return new Map(offsets.map((o) => [o.partition, Number(o.high)]));
      } catch (err) {
        if (!endOffsetsRetriable(err) || attempt >= 10)
          throw kafkaError(`cannot read the end offsets of ${topic}`, err);
        await new Promise((r) => setTimeout(r, 100 * 2 ** Math.min(attempt, 4)));
      }
    }
  }

  /**
   * The offsets `groupId` committed for `partition` of each topic (the next offset to read); a
   * topic without a committed offset there is absent. Read after a task's producer fenced the
   * previous owner, they are final: that owner can commit no more.
   */
  async committedOffsets(groupId: string, topics: readonly string[], partition: number): Promise<Map<string, number>> {
    const answer = await this.asked(`cannot read the offsets ${groupId} committed`, () =>
      this.admin.fetchOffsets({ groupId, topics: [...topics] }),
    );
    const out = new Map<string, number>();
    for (const t of answer)
      for (const p of t.partitions)
        if (p.partition === partition && Number(p.offset) >= 0) out.set(t.topic, Number(p.offset));
    return out;
  }

  /** The partition count of each named topic that exists. */
  async partitionCounts(topics: readonly string[]): Promise<Map<string, number>> {
    const meta = await this.asked(`cannot read the metadata of ${topics.join(', ')}`, () =>
      this.admin.fetchTopicMetadata({ topics: [...topics] }),
    );
    return new Map(meta.topics.map((t) => [t.name, t.partitions.length]));
  }

  /** The cluster's id (KRaft: the one `kafka-storage format` gave it); stable for the cluster's life. */
  async clusterId(): Promise<string> {
    return (await this.asked('cannot describe the cluster', () => this.admin.describeCluster())).clusterId;
  }

  /** How many brokers the cluster has now (those registered with the controller). */
  async brokerCount(): Promise<number> {
    return (await this.asked('cannot describe the cluster', () => this.admin.describeCluster())).brokers.length;
  }

  /** `read()`, asked again while it meets a transient fault (see the class comment). */
  private async asked<T>(what: string, read: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + TRANSIENT_FAULT_MS;
    for (let attempt = 0; ; attempt++) {
      try {
        return await read();
      } catch (err) {
        if (!isTransientFault(err) || Date.now() >= deadline) throw kafkaError(what, err);
        await new Promise((r) => setTimeout(r, Math.min(100 * 2 ** attempt, 2_000)));
      }
    }
  }

  /**
   * The partitions that members of `groupId` other than `memberId` said they owned when they
   * joined its current generation: those of a rebalance's moves whose previous owner is alive and
   * closing its task. One request, not asked again: a caller that cannot wait assumes the worst.
   */
  async claimedByOthers(groupId: string, memberId: string): Promise<Set<number>> {
    const { groups } = await this.admin.describeGroups([groupId]);
    const out = new Set<number>();
    for (const m of groups[0]?.members ?? [])
      if (m.memberId !== memberId) for (const p of ownedOf(m.memberMetadata)) out.add(p);
    return out;
  }

  /**
   * The standby partitions the group's leader gave `memberId` in the group's current generation
   * (its assignment's user data, which kafkajs does not hand to the member itself); [] when the
   * member is not in the group (a newer generation without it) or the leader named none.
   */
  async standbysOf(groupId: string, memberId: string): Promise<number[]> {
    const { groups } = await this.admin.describeGroups([groupId]);
    const member = groups[0]?.members.find((m) => m.memberId === memberId);
    return member ? standbysIn(member.memberAssignment) : [];
  }

  async deleteGroups(groupIds: string[]): Promise<void> {
    await this.admin.deleteGroups(groupIds).catch(() => undefined);
  }

  async close(): Promise<void> {
    this.onClose();
    await this.admin.disconnect();
  }
}

/**
 * Whether a failed `fetchTopicOffsets` is worth asking again: a retriable broker answer, or the
 * TypeError kafkajs 2.2.4 throws (`Cannot destructure property 'partitions' of 'high.pop(...)'`)
 * when a broker just back answers for partitions it no longer leads. Chaos runs met it at every
 * broker restart; thrown at once, it cost the task its opening and the member a rejoin.
 */
function endOffsetsRetriable(err: unknown): boolean {
  if ((err as { retriable?: boolean }).retriable === true) return true;
  return err instanceof TypeError && /Cannot destructure property 'partitions'/.test(err.message);
}

/** What a member says of its local state when it joins a group (its subscription's user data). */
export interface MemberClaims {
  /** The partitions it owned in the previous generation (or, just restarted, has local state for). */
  readonly owned: number[];
  /** The partitions it keeps a local copy of without owning them (standbys). */
  readonly warm: number[];
}

/** The user data a member joins with: `{"owned":[…],"warm":[…]}` (a member before standbys sent the bare owned array). */
export function encodeClaims(claims: MemberClaims): Buffer {
  return Buffer.from(JSON.stringify(claims));
}

/** The partitions a member said it owns and keeps warm when it joined; none when its metadata says nothing readable. */
export function memberClaims(metadata: Buffer): MemberClaims {
  try {
    const parsed: unknown = JSON.parse(
      kafkajs.AssignerProtocol.MemberMetadata.decode(metadata)?.userData.toString() || '[]',
    );
    if (Array.isArray(parsed)) return { owned: partitionList(parsed), warm: [] };
    const o = parsed as { owned?: unknown; warm?: unknown } | null;
    return { owned: partitionList(o?.owned), warm: partitionList(o?.warm) };
  } catch {
    return { owned: [], warm: [] };
  }
}

/** The partitions a member said it owns when it joined; none when its metadata says nothing readable. */
export function ownedOf(metadata: Buffer): number[] {
  return memberClaims(metadata).owned;
}

/** The leader's word to one member besides its partitions (its assignment's user data): the standbys it keeps. */
export function encodeStandbys(standby: readonly number[]): Buffer {
  return Buffer.from(JSON.stringify({ standby }));
}

/** The standby partitions in a member's assignment; none when it names none (a leader before standbys). */
export function standbysIn(assignment: Buffer): number[] {
  try {
    const parsed = JSON.parse(
      kafkajs.AssignerProtocol.MemberAssignment.decode(assignment)?.userData.toString() || '{}',
    ) as { standby?: unknown } | null;
    return partitionList(parsed?.standby);
  } catch {
    return [];
  }
}

/** The integers of a JSON list of partition numbers from another member; [] for anything else. */
function partitionList(v: unknown): number[] {
  return Array.isArray(v) ? v.filter((p): p is number => Number.isInteger(p)) : [];
}

/**
 * Whether `err` is an answer to ask again about topics just created: retriable by kafkajs's word,
 * or a broker that has not heard of them yet (UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE),
 * also when kafkajs has wrapped that in a give-up of its own retries (seen on a three-broker
 * cluster with 26 topics of 8 partitions, a few seconds after the cluster started).
 */
function notYetKnown(err: unknown): boolean {
  for (
    let e = err as { retriable?: boolean; type?: string; originalError?: unknown; cause?: unknown } | undefined,
      depth = 0;
    e && depth < 5;
    depth++
  ) {
    if (e.retriable === true || e.type === 'UNKNOWN_TOPIC_OR_PARTITION' || e.type === 'LEADER_NOT_AVAILABLE')
      return true;
    e = (e.originalError ?? e.cause) as typeof e;
  }
  return false;
}
