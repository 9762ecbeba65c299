import { randomUUID } from 'node:crypto';
import { constants, crc32, deflateRawSync, gzipSync } from 'node:zlib';
import { sha1Digest } from '../common/payload.js';

/** An HTTP header list as the fetcher hands it over; arrays keep order and repeats. */
export type HttpHeaders = Record<string, string> | [string, string][];

/** WARC named fields in the order they are written; `Content-Length` is added by `warcRecord`. */
export type WarcFields = [string, string][];

export const WARC_VERSION = 'WARC/1.1';
export const REVISIT_PROFILES = {
  'identical-payload-digest': 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest',
  'server-not-modified': 'http://netpreserve.org/warc/1.1/revisit/server-not-modified',
} as const;

// headers renamed in stored responses because the stored payload no longer matches them
export const RENAMED_PREFIX = 'X-Crawlstream-Original-';

const CRLF = '\r\n';

/** A fresh record id, `<urn:uuid:…>`. */
export function newRecordId(): string {
  return `<urn:uuid:${randomUUID()}>`;
}

/**
 * A WARC-Date: UTC, W3C ISO 8601 with millisecond precision (`2024-05-01T12:00:00.123Z`), which
 * WARC 1.1 allows. Revisit records must format the original's date the same way to match it.
 */
export function warcDate(d: Date): string {
  return d.toISOString();
}

/** gzip level of WARC records unless a writer is told otherwise (see WarcWriterOptions.gzipLevel). */
export const DEFAULT_GZIP_LEVEL = 1;

/**
 * Whether an HTTP payload is already compressed, so deflating it again would only cost CPU: it
 * carries a content coding (gzip, br, deflate, zstd), or its media type is a compressed format.
 */
export function isCompressedPayload(headers: HttpHeaders): boolean {
  const list = Array.isArray(headers) ? headers : Object.entries(headers);
  for (const [name, value] of list) {
    const lower = name.toLowerCase();
    if (lower === 'content-encoding') {
      const coding = String(value).trim().toLowerCase();
      if (coding !== '' && coding !== 'identity') return true;
    } else if (lower === 'content-type' && COMPRESSED_TYPES.test(String(value))) {
      return true;
    }
  }
  return false;
}

const COMPRESSED_TYPES =
  /^\s*(?:image\/(?:jpeg|png|gif|webp|avif)|video\/|audio\/(?:mpeg|mp4|aac|ogg|opus|webm)|application\/(?:zip|gzip|x-gzip|zstd|x-bzip2|x-xz|x-7z-compressed|vnd\.rar))/i;

/**
 * One complete WARC record: version line, `fields`, Content-Length, blank line, `block`, and the
 * two closing CRLFs. Field values have CR and LF replaced by spaces so a hostile value can never
 * forge a field or end the header early.
 */
export function warcRecord(fields: WarcFields, block: Buffer): Buffer {
  return Buffer.concat(warcRecordParts(fields, [block]));
}

/**
 * The same record as `warcRecord` with the block given in pieces (e.g. an HTTP head and its
 * payload), returned in pieces: the record head, each block piece, the closing CRLFs. Nothing is
 * copied; `gzipMember` takes the pieces as they are.
 */
export function warcRecordParts(fields: WarcFields, block: readonly Buffer[]): Buffer[] {
  let length = 0;
  for (const b of block) length += b.length;
  let head = WARC_VERSION + CRLF;
  for (const [name, value] of fields) head += `${name}: ${oneLine(value)}${CRLF}`;
  head += `Content-Length: ${length}${CRLF}${CRLF}`;
  return [Buffer.from(head, 'utf8'), ...block, RECORD_END];
}

const RECORD_END = Buffer.from(CRLF + CRLF);
// gzip member header: magic, deflate, no flags, no mtime, no extra flags, OS unknown
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]);
// deflate stored blocks carry at most this many bytes each
const MAX_STORED_BLOCK = 65_535;
// fewer bytes than this to compress are stored: see gzipMember
const MIN_DEFLATE_BYTES = 2_048;

/**
 * A payload as a raw deflate segment at `level`, sync-flushed and not final: what `gzipMember`
 * takes as its `deflatedPart`, made ahead of the record (on a parse worker) so the thread that
 * writes the WARC file does not compress the payload itself. Pure.
 */
export function deflatePayload(payload: Uint8Array, level = DEFAULT_GZIP_LEVEL): Buffer {
  return deflateRawSync(payload, { level, finishFlush: constants.Z_SYNC_FLUSH });
}

/**
 * A record as its own gzip member, so any record can be read from its offset alone. `level` is
 * zlib's 1 (fastest, the default) to 9 (smallest). `parts` are the record's bytes in order.
 *
 * The part at index `storedPart`, if given, is already compressed (a gzip- or br-encoded HTTP
 * body, an image): it goes into deflate stored blocks, copied as is, because deflating compressed
 * bytes again costs more CPU than anything else in archiving a page and saves nothing. The parts
 * before it are deflated and sync-flushed (so the stored blocks start on a byte boundary), the
 * parts after it stored too. When the bytes left to deflate are fewer than MIN_DEFLATE_BYTES (a
 * request record, a revisit, the heads of a stored payload), the whole member is stored: setting
 * up a zlib stream costs more CPU than the few hundred bytes it would save are worth.
 *
 * With `deflatedPart` (`deflatePayload` of the part at `storedPart`, trusted, not checked) that
 * part is written as those bytes instead of stored; the parts before it are stored when they are
 * fewer than MIN_DEFLATE_BYTES, deflated otherwise. Only the CRC of the part is computed here.
 * Any gzip reader inflates the member to exactly the parts joined.
 */
export function gzipMember(
  parts: Buffer | readonly Buffer[],
  level = DEFAULT_GZIP_LEVEL,
  storedPart = -1,
  deflatedPart?: Buffer,
): Buffer {
  const list = Buffer.isBuffer(parts) ? [parts] : parts;
  let crc = 0;
  let size = 0;
  for (const p of list) {
    // zlib.crc32 of an empty buffer returns 0, not the running value (Node 20.20)
    if (p.length === 0) continue;
    crc = crc32(p, crc);
    size += p.length;
  }
  const special = storedPart >= 0 && storedPart < list.length;
  const deflated = special ? deflatedPart : undefined;
  const stored = special && deflated === undefined ? list[storedPart]!.length : 0;
  const storeAll = deflated === undefined && size - stored < MIN_DEFLATE_BYTES;
  if (!storeAll && stored === 0 && deflated === undefined)
    return gzipSync(list.length === 1 ? list[0]! : Buffer.concat(list), { level });
  const out: Buffer[] = [GZIP_HEADER];
  if (storeAll) {
    storedBlocks(joined(list), true, out);
  } else {
    const head = list.slice(0, storedPart);
    if (head.length > 0) {
      const bytes = joined(head);
      if (deflated !== undefined && bytes.length < MIN_DEFLATE_BYTES) storedBlocks(bytes, false, out);
      else out.push(deflateRawSync(bytes, { level, finishFlush: constants.Z_SYNC_FLUSH }));
    }
    if (deflated !== undefined) out.push(deflated);
    else storedBlocks(list[storedPart]!, false, out);
    storedBlocks(joined(list.slice(storedPart + 1)), true, out);
  }
  const trailer = Buffer.allocUnsafe(8);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE(size % 2 ** 32, 4);
  out.push(trailer);
  return Buffer.concat(out);
}

function joined(list: readonly Buffer[]): Buffer {
  return list.length === 1 ? list[0]! : Buffer.concat(list);
}

/** Appends `data` as deflate stored blocks (RFC 1951 §3.2.4), the last one final if `final`. */
function storedBlocks(data: Buffer, final: boolean, out: Buffer[]): void {
  let at = 0;
  do {
    const n = Math.min(MAX_STORED_BLOCK, data.length - at);
    const last = final && at + n === data.length;
    const header = Buffer.allocUnsafe(5);
    header[0] = last ? 1 : 0;
    header.writeUInt16LE(n, 1);
    header.writeUInt16LE(~n & 0xffff, 3);
    out.push(header, data.subarray(at, at + n));
    at += n;
  } while (at < data.length);
}

/** An `application/warc-fields` block: `name: value` lines. */
export function warcFieldsBlock(fields: Record<string, string>): Buffer {
  let out = '';
  for (const [name, value] of Object.entries(fields)) out += `${oneLine(name)}: ${oneLine(value)}${CRLF}`;
  return Buffer.from(out, 'utf8');
}

/**
 * The raw HTTP request head, terminated by exactly one blank line. Header text is written byte
 * for byte (latin1) as HTTP carries it, unless it holds characters beyond U+00FF.
 */
export function httpRequestBlock(requestHeaders: string): Buffer {
  const head = requestHeaders.replace(/(?:\r?\n)*$/, '') + CRLF + CRLF;
  return Buffer.from(head, encodingOf(head));
}

/**
 * The HTTP response head for a stored payload. The payload is stored as received after transfer
 * decoding, so `Transfer-Encoding` is renamed to `X-Crawlstream-Original-Transfer-Encoding`, and a
 * `Content-Length` that disagrees with the stored payload (truncation, chunking) is renamed
 * likewise and replaced by the true length. `Content-Encoding` stays: the payload keeps it.
 * `payloadLength` undefined is a revisit's head: it stores no payload and replays with its
 * original's, so `Content-Length` stays as received (pywb serves the original's payload with the
 * revisit's headers, and a `Content-Length: 0` there would cut it to nothing).
 */
export function httpResponseHead(statusLine: string, headers: HttpHeaders, payloadLength?: number): Buffer {
  const list = Array.isArray(headers) ? headers : Object.entries(headers);
  let head = oneLine(statusLine).trim() + CRLF;
  let chunked = false;
  let lengthOk = false;
  let lengthRenamed = false;
  for (const [rawName, rawValue] of list) {
    const name = oneLine(rawName).trim();
    const value = oneLine(String(rawValue));
    const lower = name.toLowerCase();
    if (lower === 'transfer-encoding') {
      chunked = true;
      head += `${RENAMED_PREFIX}${name}: ${value}${CRLF}`;
    } else if (lower === 'content-length' && payloadLength !== undefined) {
      if (!lengthOk && value.trim() === String(payloadLength)) {
        lengthOk = true;
        head += `${name}: ${value}${CRLF}`;
      } else {
        lengthRenamed = true;
        head += `${RENAMED_PREFIX}${name}: ${value}${CRLF}`;
      }
    } else {
      head += `${name}: ${value}${CRLF}`;
    }
  }
  if (payloadLength !== undefined && !lengthOk && (chunked || lengthRenamed))
    head += `Content-Length: ${payloadLength}${CRLF}`;
  head += CRLF;
  return Buffer.from(head, encodingOf(head));
}

function oneLine(value: string): string {
  return /[\r\n]/.test(value) ? value.replace(/[\r\n]+/g, ' ') : value;
}

function encodingOf(text: string): BufferEncoding {
  // HTTP header bytes arrive as latin1 strings; writing them back as latin1 restores the bytes
  // eslint-disable-next-line no-control-regex -- the range is every latin1 code point, NUL included
  return /[^\x00-\xff]/.test(text) ? 'utf8' : 'latin1';
}

/**
 * One record's bytes in pieces, and which piece (if any) is stored rather than deflated, or given
 * deflated already (`deflatedPart`, see gzipMember).
 */
export interface MemberSpec {
  parts: Buffer[];
  storedPart?: number;
  deflatedPart?: Buffer;
}

export function recordMember(fields: WarcFields, block: Buffer): MemberSpec {
  return { parts: warcRecordParts(fields, [block]) };
}

/** A metadata record of `application/warc-fields`, concurrent to `concurrentTo` when given. */
export function metadataMember(
  recordId: string,
  targetUri: string,
  date: string,
  warcinfoId: string,
  fields: Record<string, string>,
  concurrentTo?: string,
): MemberSpec {
  const block = warcFieldsBlock(fields);
  return recordMember(
    [
      ['WARC-Type', 'metadata'],
      ['WARC-Record-ID', recordId],
      ['WARC-Date', date],
      ['WARC-Target-URI', targetUri],
      ...(concurrentTo === undefined ? [] : ([['WARC-Concurrent-To', concurrentTo]] as WarcFields)),
      ['WARC-Warcinfo-ID', warcinfoId],
      ['WARC-Block-Digest', sha1Digest(block)],
      ['Content-Type', 'application/warc-fields'],
    ],
    block,
  );
}
