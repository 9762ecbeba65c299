import { connect as tcpConnect, isIP } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { ISocketFactory, ProducerRecord } from 'kafkajs';
import { CrawlError } from '../../../core/errors.js';
import type { RecordHeaders } from '../../record.js';
import type { TopicNaming } from '../../topology.js';
import { brokerText, parseBrokerList } from './broker-list.js';

/** A record to write; `partition` is always chosen by the caller (murmur2, runtime/partitioner.ts). */
export interface OutRecord {
  readonly topic: string;
  readonly partition: number;
  readonly key: Buffer;
  readonly value: Buffer | null;
  readonly timestamp: number;
  readonly headers?: RecordHeaders;
}

export interface TopicPartitionOffset {
  readonly topic: string;
  readonly partition: number;
  /** The next offset to read (Kafka's committed-offset convention). */
  readonly offset: number;
}

export interface TopicDefinition {
  readonly name: string;
  readonly partitions: number;
  /** 1 when omitted. */
  readonly replicationFactor?: number;
  readonly config: Readonly<Record<string, string>>;
}

/** A producer bound to one transactional id. Creating it fences every older producer of that id. */
export interface TransactionalProducer {
  /**
   * Writes `records` and commits `offsets` for `groupId` in one transaction. Resolves with each
   * written partition's first offset (`topic\0partition` → offset). Throws CrawlError CS_FENCED
   * when a newer producer took the id, CS_KAFKA on any other failure (the transaction is aborted).
   */
  commit(
    records: readonly OutRecord[],
    groupId: string,
    offsets: readonly TopicPartitionOffset[],
  ): Promise<Map<string, number>>;
  close(): Promise<void>;
}

const FENCED = new Set([
  'PRODUCER_FENCED',
  'INVALID_PRODUCER_EPOCH',
  'INVALID_PRODUCER_ID_MAPPING',
  'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
]);

/** Maps a client error to CS_FENCED (another producer owns the transactional id now) or CS_KAFKA. */
export function kafkaError(message: string, err: unknown): CrawlError {
  const e = err as { type?: string; message?: string; name?: string; originalError?: { type?: string } };
  const type = e.type ?? e.originalError?.type;
  const text = `${message}: ${type ?? e.name ?? 'error'} ${e.message ?? String(err)}`;
  const fenced = (type !== undefined && FENCED.has(type)) || /fenced|producer epoch/i.test(e.message ?? '');
  return new CrawlError(fenced ? 'CS_FENCED' : 'CS_KAFKA', text, { cause: err });
}

/**
 * The stable code of a broker fault, or undefined for any other error: CS_FENCED or CS_KAFKA as
 * this door reports them, or a kafkajs error that reached a caller unwrapped (a connection
 * refused, retries spent), CS_KAFKA. The one place outside kafkajs' own files that knows its error names.
 */
export function kafkaFaultCode(err: unknown): 'CS_KAFKA' | 'CS_FENCED' | undefined {
  if (err instanceof CrawlError) return err.code === 'CS_KAFKA' || err.code === 'CS_FENCED' ? err.code : undefined;
  return /^KafkaJS/.test((err as Error | undefined)?.name ?? '') ? 'CS_KAFKA' : undefined;
}

/** A fault as kafkajs builds it: its class name, the broker's answer, whether kafkajs would retry it, what it wraps. */
type Fault = { name?: string; type?: string; message?: string; retriable?: boolean; cause?: unknown };

/** `err` and the causes it wraps, outermost first; at most 8 deep (a cycle ends there). */
function* faultChain(err: unknown): Generator<Fault> {
  let e = err as Fault | undefined;
  for (let depth = 0; e && depth < 8; depth++, e = e.cause as Fault | undefined) yield e;
}

const BUSY = /CONCURRENT_TRANSACTIONS|COORDINATOR_LOAD_IN_PROGRESS|NOT_COORDINATOR|INCOMPLETE_SEND/;

/**
 * The broker's "the previous transaction of this id is still being ended" (or its coordinator
 * moved), or a send that left partitions out: try again. Also when kafkajs gave up retrying one
 * of those itself: its KafkaJSNumberOfRetriesExceeded names the broker's answer only as its
 * `cause` (a fetcher task's commit was lost so, and with it the results of fetches it had made).
 */
export function transactionBusy(err: unknown): boolean {
  for (const e of faultChain(err)) if (BUSY.test(`${e.type ?? ''} ${e.message ?? ''}`)) return true;
  return false;
}

/** kafkajs' names of faults that a broker's restart or a moving leader causes, whatever their `retriable`. */
const TRANSIENT = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSBrokerNotFound',
  'KafkaJSMetadataNotLoaded',
]);

/**
 * A broker fault that asking again may cure: a connection-class error, or one kafkajs marks
 * retriable, also when it reached us as its retries spent. An authentication or authorization
 * failure, a bad request, an unknown error or a topic that does not exist (kafkajs calls that
 * retriable: a new topic's metadata may lag; callers that create topics wait for them apart) is not.
 */
export function isTransientFault(err: unknown): boolean {
  for (const e of faultChain(err)) {
    if (e.type === 'UNKNOWN_TOPIC_OR_PARTITION') return false;
    if (TRANSIENT.has(e.name ?? '') || e.retriable === true) return true;
    if (e.name !== 'KafkaJSNumberOfRetriesExceeded') return false;
  }
  return false;
}

/** The most bytes of keys, values and headers one produce request of a commit carries (one larger record goes alone). */
export const SEND_CHUNK_BYTES = 512 * 1024;

/** Consecutive runs of `records` of at most `limit` bytes each (a record larger than that alone); order kept. */
export function chunksOf(records: readonly OutRecord[], limit: number): OutRecord[][] {
  const chunks: OutRecord[][] = [];
  let current: OutRecord[] = [];
  let bytes = 0;
  for (const r of records) {
    let size = r.key.length + (r.value?.length ?? 0) + 64;
    for (const [k, v] of Object.entries(r.headers ?? {})) size += k.length + v.length;
    if (current.length > 0 && bytes + size > limit) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(r);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/** kafkajs' request shape of `records`, grouped by topic under its cluster name (`naming`). */
export function toTopicMessages(records: readonly OutRecord[], naming: TopicNaming): ProducerRecord[] {
  const byTopic = new Map<string, ProducerRecord>();
  for (const r of records) {
    let entry = byTopic.get(r.topic);
    if (!entry) byTopic.set(r.topic, (entry = { topic: naming.physicalTopic(r.topic), messages: [] }));
    entry.messages.push({
      key: r.key,
      value: r.value,
      partition: r.partition,
      timestamp: String(r.timestamp),
      ...(r.headers ? { headers: { ...r.headers } } : {}),
    });
  }
  return [...byTopic.values()];
}

/**
 * The seed brokers as kafkajs takes them, and the socket factory that connects to them. kafkajs
 * splits a seed at its first ':' (`[::1]:9092` would be host `[`), so an IPv6 seed is given to it
 * under a stand-in name without colons that the factory maps back to the address; every other
 * seed, and every broker learnt from metadata (host and port apart), connects as named. Sockets
 * are made as kafkajs' own factory makes them: TLS names the server unless it is an IP address,
 * keep-alive every minute. Throws CS_INVALID_OPTION on a bad list (parseBrokerList).
 */
export function kafkajsSeeds(brokers: readonly string[]): { brokers: string[]; socketFactory: ISocketFactory } {
  const standIns = new Map<string, string>();
  const seeds = parseBrokerList(brokers).map((b) => {
    if (isIP(b.host) !== 6) return brokerText(b);
    const name = `crawlstream-ipv6-seed-${standIns.size}.invalid`;
    standIns.set(name, b.host);
    return `${name}:${b.port}`;
  });
  const socketFactory: ISocketFactory = ({ host: named, port, ssl, onConnect }) => {
    const host = standIns.get(named) ?? named;
    const socket = ssl
      ? tlsConnect({ host, port, ...(isIP(host) === 0 ? { servername: host } : {}), ...ssl }, onConnect)
      : tcpConnect({ host, port }, onConnect);
    socket.setKeepAlive(true, 60_000);
    return socket;
  };
  return { brokers: seeds, socketFactory };
}
