import { createHash, randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';

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
const RENAMED_PREFIX = 'X-Crawlstream-Original-';

const CRLF = '\r\n';
const BASE32_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

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

/** `sha1:` followed by the RFC 4648 base32 SHA-1 of `data`, the form WARC digests use. */
export function sha1Digest(...data: Buffer[]): string {
  const hash = createHash('sha1');
  for (const d of data) hash.update(d);
  return 'sha1:' + base32(hash.digest());
}

/** RFC 4648 base32, uppercase, without padding (a SHA-1 digest is exactly 32 characters). */
export function base32(bytes: Buffer): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32_ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32_ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

/**
 * One complete WARC record: version line, `fields`, Content-Length, blank line, `block`, and the
 * two closing CRLFs. Field values have CR and LF replaced by spaces so a hostile value can never
 * forge a field or end the header early.
 */
export function warcRecord(fields: WarcFields, block: Buffer): Buffer {
  let head = WARC_VERSION + CRLF;
  for (const [name, value] of fields) head += `${name}: ${oneLine(value)}${CRLF}`;
  head += `Content-Length: ${block.length}${CRLF}${CRLF}`;
  return Buffer.concat([Buffer.from(head, 'utf8'), block, Buffer.from(CRLF + CRLF)]);
}

/**
 * A record as its own gzip member, so any record can be read from its offset alone. `level` is
 * zlib's 1 (fastest) to 9 (smallest); 6 by default.
 */
export function gzipMember(record: Buffer, level = 6): Buffer {
  return gzipSync(record, { level });
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
 */
export function httpResponseHead(statusLine: string, headers: HttpHeaders, payloadLength: number): Buffer {
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
    } else if (lower === 'content-length') {
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
  if (!lengthOk && (chunked || lengthRenamed)) head += `Content-Length: ${payloadLength}${CRLF}`;
  head += CRLF;
  return Buffer.from(head, encodingOf(head));
}

function oneLine(value: string): string {
  return /[\r\n]/.test(value) ? value.replace(/[\r\n]+/g, ' ') : value;
}

function encodingOf(text: string): BufferEncoding {
  // HTTP header bytes arrive as latin1 strings; writing them back as latin1 restores the bytes
  return /[^\x00-\xff]/.test(text) ? 'utf8' : 'latin1';
}
