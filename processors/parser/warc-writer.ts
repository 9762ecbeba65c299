import { InvalidOptionError } from '../../core/errors.js';
import {
  DEFAULT_GZIP_LEVEL,
  REVISIT_PROFILES,
  type HttpHeaders,
  type WarcFields,
  httpRequestBlock,
  httpResponseHead,
  isCompressedPayload,
  newRecordId,
  warcDate,
  metadataMember,
  recordMember,
  warcRecordParts,
} from './warc-records.js';
import { sha1Digest } from '../common/payload.js';
import { defaultCrawlConfig } from '../common/crawl-config.js';
import { WarcRoll, type WarcLocation } from './warc-roll.js';

export type { WarcLocation } from './warc-roll.js';

export interface WarcWriterOptions {
  dir: string;
  /** File name prefix; letters, digits, `.`, `_`, `-`. Default `crawlstream`. */
  prefix?: string;
  /** Partition number 0–99999 written into file names; one writer per (dir, prefix, partition). */
  partition?: number;
  /** Rotate before a record would make the file larger than this. Default: the crawl's (1 GiB). */
  maxFileBytes?: number;
  /** `software` field of the warcinfo record. */
  software?: string;
  /** `operator` field of the warcinfo record. */
  operator?: string;
  /**
   * gzip level of each record, 1–9. Default 1: deflating an uncompressed payload is the largest
   * CPU cost of archiving (docs/BENCHMARKS-LOG.md), and 6 is ~2.5× slower for files ~10–35 % smaller.
   * Payloads that arrive compressed (content-encoded, or a compressed media type) are stored in
   * the gzip member as they are, at any level.
   */
  gzipLevel?: number;
  /**
   * Called with a file's final name once it is closed (renamed, fsynced): after rotation,
   * `closeFile()` and `close()`. Files recovered by `open()` are not announced; a caller that
   * wants them lists the directory after `open()`. Must not throw or call back into the writer.
   */
  onFileClosed?: (name: string) => void;
  /**
   * Write each file's CDXJ index (`<base>.cdxj`, pywb's format) beside it when the file closes,
   * before it takes its final name, so a final-named WARC always has its index. Default false.
   */
  cdxj?: boolean;
}

export interface RequestResponseArgs {
  targetUri: string;
  /** Start of the fetch; both records carry it as WARC-Date. */
  date: Date;
  ip?: string;
  /** Raw HTTP request head (request line and headers). */
  requestHeaders: string;
  statusLine: string;
  responseHeaders: HttpHeaders;
  /** Body as received after transfer decoding; content encoding (gzip, br) is kept. */
  payload: Buffer;
  /** `sha1Digest(payload)` when the caller has it already; it is trusted, not recomputed. */
  payloadDigest?: string;
  /**
   * `deflatePayload(payload, gzipLevel)` when the caller made it already (off this thread); it is
   * trusted, not recomputed. Unused for a payload stored as is (compressed already).
   */
  deflatedPayload?: Buffer;
  truncated?: 'length' | 'time';
  /** Fields of a metadata record written right after the request, concurrent to the response (e.g. fetch facts). */
  metadata?: Record<string, string>;
}

export interface RevisitArgs {
  targetUri: string;
  date: Date;
  refersToUri: string;
  refersToDate: Date;
  refersToRecordId?: string;
  /** The payload's digest; absent for a 304 whose earlier payload's digest is not known. */
  payloadDigest?: string;
  statusLine: string;
  responseHeaders: HttpHeaders;
  profile: keyof typeof REVISIT_PROFILES;
  /** Fields of a metadata record written right after the revisit, concurrent to it (e.g. fetch facts). */
  metadata?: Record<string, string>;
}

export interface MetadataArgs {
  targetUri: string;
  date: Date;
  fields: Record<string, string>;
}

const DEFAULT_PREFIX = 'crawlstream';
// the crawl's --warc-max-file default; a writer alone may rotate smaller files (tests do), hence its own least of 1
const DEFAULT_MAX_FILE_BYTES = defaultCrawlConfig.warcMaxFileBytes;

/**
 * Writes WARC 1.1 files, one gzip member per record, into `dir`, named
 * `<prefix>-<yyyyMMddHHmmssSSS>-<partition:5>-<seq:5>.warc.gz` (UTC creation time; names sort
 * in writing order per partition). A file is named `<name>.open` while written, begins with a
 * warcinfo record and is rotated before a record would push it past `maxFileBytes` (a record
 * larger than that gets a file of its own). A request and its response always share a file.
 *
 * Durability: after `flush()` returns, every location handed out so far survives a crash; it is
 * readable at its final name once the file is rotated or closed, or after a crash once `open()`
 * of a writer with the same dir, prefix and partition has recovered it. A location handed out
 * but not flushed may dangle after a crash; it never points at another record.
 *
 * Synchronous by design: the caller is a synchronous stream processor. Not safe to share
 * between two writers of the same (dir, prefix, partition).
 */
export class WarcWriter {
  /** Where the files are written, their name prefix and partition, as given. */
  readonly dir: string;
  readonly prefix: string;
  readonly partition: number;
  /** zlib level of its records' gzip members (WarcWriterOptions.gzipLevel). */
  readonly gzipLevel: number;
  /** Its files: rotation, durability, recovery and indexes (warc-roll.ts). */
  private readonly roll: WarcRoll;

  constructor(o: WarcWriterOptions) {
    if (typeof o.dir !== 'string' || o.dir === '') {
      throw new InvalidOptionError(`WARC dir must be a non-empty path, got ${JSON.stringify(o.dir)}`);
    }
    const prefix = o.prefix ?? DEFAULT_PREFIX;
    if (!/^[A-Za-z0-9._-]+$/.test(prefix)) {
      throw new InvalidOptionError(
        `WARC prefix must be letters, digits, '.', '_' or '-', got ${JSON.stringify(prefix)}`,
      );
    }
    const partition = o.partition ?? 0;
    if (!Number.isInteger(partition) || partition < 0 || partition > 99_999) {
      throw new InvalidOptionError(`WARC partition must be an integer in 0..99999, got ${partition}`);
    }
    const maxFileBytes = o.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
    if (!Number.isSafeInteger(maxFileBytes) || maxFileBytes < 1) {
      throw new InvalidOptionError(`WARC maxFileBytes must be a positive integer, got ${maxFileBytes}`);
    }
    const gzipLevel = o.gzipLevel ?? DEFAULT_GZIP_LEVEL;
    if (!Number.isInteger(gzipLevel) || gzipLevel < 1 || gzipLevel > 9) {
      throw new InvalidOptionError(`WARC gzipLevel must be an integer in 1..9, got ${gzipLevel}`);
    }
    this.dir = o.dir;
    this.prefix = prefix;
    this.partition = partition;
    this.gzipLevel = gzipLevel;
    this.roll = new WarcRoll({
      dir: o.dir,
      prefix,
      partition,
      maxFileBytes,
      software: o.software ?? 'crawlstream',
      operator: o.operator,
      gzipLevel,
      cdxj: o.cdxj ?? false,
      onFileClosed: o.onFileClosed,
    });
  }

  /**
   * Creates `dir` if needed and recovers this writer's files left by a crash: each
   * `*.warc.gz.open` of the same prefix and partition is cut to its last complete gzip member
   * and renamed to its final name (deleted if no record survived). Files of other partitions are
   * never touched. The first file is created lazily, at the first record.
   */
  open(): void {
    this.roll.open();
  }

  /**
   * Writes a response record and its request record (WARC-Concurrent-To each other), in that
   * order, in the same file. Digests are SHA-1 base32; the payload digest covers `payload` as
   * given, the block digest the whole HTTP message stored.
   */
  writeRequestResponse(args: RequestResponseArgs): {
    request: WarcLocation;
    response: WarcLocation;
    payloadDigest: string;
    blockDigest: string;
  } {
    const date = warcDate(args.date);
    const responseHead = httpResponseHead(args.statusLine, args.responseHeaders, args.payload.length);
    const payloadDigest = args.payloadDigest ?? sha1Digest(args.payload);
    const blockDigest = sha1Digest(responseHead, args.payload);
    const requestBlock = httpRequestBlock(args.requestHeaders);
    const requestDigest = sha1Digest(requestBlock);
    const responseId = newRecordId();
    const requestId = newRecordId();
    const ipField: WarcFields = args.ip === undefined ? [] : [['WARC-IP-Address', args.ip]];
    // the payload is part 2 of the response record: [record head, HTTP head, payload, CRLF CRLF]
    const compressed = isCompressedPayload(args.responseHeaders);
    const deflatedPart = compressed ? undefined : args.deflatedPayload;
    const storedPart = compressed || deflatedPart !== undefined ? 2 : -1;

    const metadataId = args.metadata === undefined ? undefined : newRecordId();
    const ids = metadataId === undefined ? [responseId, requestId] : [responseId, requestId, metadataId];
    const [response, request] = this.roll.append(ids, (warcinfoId) => [
      {
        parts: warcRecordParts(
          [
            ['WARC-Type', 'response'],
            ['WARC-Record-ID', responseId],
            ['WARC-Date', date],
            ['WARC-Target-URI', args.targetUri],
            ...ipField,
            ['WARC-Concurrent-To', requestId],
            ['WARC-Warcinfo-ID', warcinfoId],
            ['WARC-Payload-Digest', payloadDigest],
            ['WARC-Block-Digest', blockDigest],
            ...(args.truncated === undefined ? [] : ([['WARC-Truncated', args.truncated]] as WarcFields)),
            ['Content-Type', 'application/http;msgtype=response'],
          ],
          [responseHead, args.payload],
        ),
        storedPart,
        ...(deflatedPart === undefined ? {} : { deflatedPart }),
      },
      {
        parts: warcRecordParts(
          [
            ['WARC-Type', 'request'],
            ['WARC-Record-ID', requestId],
            ['WARC-Date', date],
            ['WARC-Target-URI', args.targetUri],
            ...ipField,
            ['WARC-Concurrent-To', responseId],
            ['WARC-Warcinfo-ID', warcinfoId],
            ['WARC-Block-Digest', requestDigest],
            ['Content-Type', 'application/http;msgtype=request'],
          ],
          [requestBlock],
        ),
      },
      ...(metadataId === undefined
        ? []
        : [metadataMember(metadataId, args.targetUri, date, warcinfoId, args.metadata!, responseId)]),
    ]);
    this.roll.index?.add('response', args.targetUri, date, payloadDigest, responseHead, response!);
    return { request: request!, response: response!, payloadDigest, blockDigest };
  }

  /**
   * Writes a revisit record (status line and headers, no payload) saying the payload equals
   * that of the record at `refersToUri`/`refersToDate`.
   */
  writeRevisit(args: RevisitArgs): WarcLocation {
    const block = httpResponseHead(args.statusLine, args.responseHeaders);
    const refersTo: WarcFields = args.refersToRecordId === undefined ? [] : [['WARC-Refers-To', args.refersToRecordId]];
    const recordId = newRecordId();
    const date = warcDate(args.date);
    const metadataId = args.metadata === undefined ? undefined : newRecordId();
    const location = this.roll.append(metadataId === undefined ? [recordId] : [recordId, metadataId], (warcinfoId) => [
      recordMember(
        [
          ['WARC-Type', 'revisit'],
          ['WARC-Record-ID', recordId],
          ['WARC-Date', date],
          ['WARC-Target-URI', args.targetUri],
          ['WARC-Warcinfo-ID', warcinfoId],
          ['WARC-Profile', REVISIT_PROFILES[args.profile]],
          ...refersTo,
          ['WARC-Refers-To-Target-URI', args.refersToUri],
          ['WARC-Refers-To-Date', warcDate(args.refersToDate)],
          ...(args.payloadDigest !== undefined
            ? [['WARC-Payload-Digest', args.payloadDigest] as [string, string]]
            : []),
          ['WARC-Block-Digest', sha1Digest(block)],
          ['Content-Type', 'application/http;msgtype=response'],
        ],
        block,
      ),
      ...(metadataId === undefined
        ? []
        : [metadataMember(metadataId, args.targetUri, date, warcinfoId, args.metadata!, recordId)]),
    ])[0]!;
    this.roll.index?.add('revisit', args.targetUri, date, args.payloadDigest, block, location);
    return location;
  }

  /** Writes a metadata record of `application/warc-fields` (e.g. an error code and message). */
  writeMetadata(args: MetadataArgs): WarcLocation {
    const recordId = newRecordId();
    return this.roll.append([recordId], (warcinfoId) => [
      metadataMember(recordId, args.targetUri, warcDate(args.date), warcinfoId, args.fields),
    ])[0]!;
  }

  /** Makes every record written so far durable (fsync of the current file, when it grew since the last). */
  flush(): void {
    this.roll.flush();
  }

  /**
   * Milliseconds since the open file last got a record, at `now`; undefined when no file is open.
   * An uploader closes a quiet file (`closeFile()`) so the last records of an idle crawl leave.
   */
  openFileQuietMs(now: number): number | undefined {
    return this.roll.openFileQuietMs(now);
  }

  /** Closes the open file, if any (as rotation does); the next record starts a new one. */
  closeFile(): void {
    this.roll.closeFile();
  }

  /** Flushes and renames the current file to its final name. Idempotent. */
  close(): void {
    this.roll.close();
  }
}
