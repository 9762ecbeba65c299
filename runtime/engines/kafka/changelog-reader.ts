import { randomUUID } from 'node:crypto';
import { CrawlError } from '../../../core/errors.js';
import type { ConsumedRawRecord } from '../../record.js';
import type { GroupConsumer, KafkaPort } from './kafka-port.js';
import { tp } from './kafka-task.js';

export interface ChangelogRange {
  readonly topic: string;
  readonly partition: number;
  /** First offset to read (a store's checkpoint). */
  readonly from: number;
  /** Stop before this offset (a replay up to a store's checkpoint); the partition's end when omitted. */
  readonly to?: number;
  /** The partition's end, when the caller has read it after its fence (then it is not read again). */
  readonly end?: number;
}

/**
 * Reads committed records of changelog partitions from `from` up to each partition's current end
 * (or `to`, when that comes first), handing them over in offset order per partition. Call it
 * after the task's producer has fenced earlier owners: then no transaction is open on those
 * partitions and the end is final. Rejects with what `onRecords` throws, at once and with no later
 * batch handed over; with CS_KAFKA when no partition moved for `stallMs`.
 *
 * kafkajs has no manual partition assignment, so this joins a throwaway consumer group (deleted
 * afterwards), seeks the wanted partitions and ignores the others (they start at their end).
 */
export async function readChangelogs(
  port: KafkaPort,
  ranges: readonly ChangelogRange[],
  onRecords: (topic: string, partition: number, records: ConsumedRawRecord[], next: number) => void,
  stallMs = 120_000,
): Promise<number> {
  const ends = new Map<string, number>();
  for (const r of ranges)
    if (r.end !== undefined) ends.set(tp(r.topic, r.partition), Math.min(r.end, r.to ?? Infinity));
  const unknown = new Set(ranges.filter((r) => r.end === undefined).map((r) => r.topic));
  if (unknown.size > 0) {
    const admin = await port.admin();
    try {
      for (const topic of unknown) {
        // the admin client speaks cluster names, ranges logical ones (a data topic read whole, as reparse does)
        const offsets = await admin.endOffsets(port.naming.physicalTopic(topic));
        for (const r of ranges)
          if (r.topic === topic && r.end === undefined)
            ends.set(tp(topic, r.partition), Math.min(offsets.get(r.partition) ?? 0, r.to ?? Infinity));
      }
    } finally {
      await admin.close();
    }
  }
  const todo = ranges.filter((r) => r.from < ends.get(tp(r.topic, r.partition))!);
  if (todo.length === 0) return 0;
  const wanted = new Map(todo.map((r) => [tp(r.topic, r.partition), r]));
  const reached = new Map<string, number>(todo.map((r) => [tp(r.topic, r.partition), r.from]));
  const groupId = `${port.clientId}-restore-${randomUUID()}`;
  let count = 0;
  let finish!: () => void;
  let reject!: (err: unknown) => void;
  let failed = false;
  const done = new Promise<void>((resolve, rejectDone) => {
    finish = resolve;
    reject = rejectDone;
  });
  // after a failure no later batch reaches the caller: it would skip the one that failed
  const fail = (err: unknown): void => {
    failed = true;
    reject(err);
  };
  // a failure may come before the race below is awaited: it rejects the race, never unhandled
  done.catch(() => undefined);
  // a restore may take as long as it needs while it moves; it fails only when it stops moving
  let movedAt = Date.now();
  const check = (): void => {
    movedAt = Date.now();
    for (const [key, next] of reached) if (next < ends.get(key)!) return;
    finish();
  };
  // onAssignment can run before groupConsumer resolves: a const would be read in its TDZ
  let consumer: GroupConsumer | undefined;
  // eslint-disable-next-line prefer-const
  consumer = await port.groupConsumer(
    { groupId, topics: [...new Set(todo.map((r) => r.topic))], fromBeginning: false, sessionTimeoutMs: 6_000 },
    {
      onAssignment: (assigned) => {
        for (const a of assigned) {
          const r = wanted.get(tp(a.topic, a.partition));
          if (r) consumer?.seek(a.topic, a.partition, reached.get(tp(a.topic, a.partition))!);
        }
      },
      onRecords: async (records) => {
        const first = records[0]!;
        const key = tp(first.topic, first.partition);
        if (failed || !wanted.has(key)) return;
        const end = ends.get(key)!;
        const fresh = records.filter((r) => r.offset >= reached.get(key)! && r.offset < end);
        const next = Math.min(records[records.length - 1]!.offset + 1, end);
        if (next <= reached.get(key)!) return;
        if (fresh.length > 0)
          try {
            onRecords(first.topic, first.partition, fresh, next);
          } catch (err) {
            // the caller's failure (a store that cannot take the records: a full disk) ends the read
            // at once with its own error; the consumer is not told, so it does not retry the batch
            fail(err);
            return;
          }
        count += fresh.length;
        reached.set(key, next);
        check();
      },
      onProgress: (topic, partition, next) => {
        const key = tp(topic, partition);
        if (wanted.has(key) && next > reached.get(key)!) {
          reached.set(key, Math.min(next, ends.get(key)!));
          check();
        }
      },
    },
  );
  // seek once the consumer exists; assignments that arrived before are sought here (a consumer
  // that crashed meanwhile cannot seek: it seeks in onAssignment when it has joined again)
  for (const r of todo) {
    try {
      consumer.seek(r.topic, r.partition, reached.get(tp(r.topic, r.partition))!);
    } catch {
      break;
    }
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      done,
      new Promise((_, reject) => {
        timer = setInterval(
          () => {
            if (Date.now() - movedAt < stallMs) return;
            const behind = [...reached]
              .filter(([key, next]) => next < ends.get(key)!)
              .map(([key, next]) => `${key.replace('\u0000', '-')} at ${next} of ${ends.get(key)}`);
            reject(new CrawlError('CS_KAFKA', `restore made no progress for ${stallMs} ms: ${behind.join(', ')}`));
          },
          Math.min(1_000, stallMs),
        );
      }),
    ]);
  } finally {
    clearInterval(timer);
    await consumer?.close().catch(() => undefined);
    const cleanup = await port.admin();
    await cleanup.deleteGroups([groupId]);
    await cleanup.close();
  }
  return count;
}
