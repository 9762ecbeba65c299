import { closeSync, mkdtempSync, openSync, readSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { RequestResponseArgs, WarcLocation } from '../../../processors/parser/warc-writer.js';

export function tempDir(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'crawlstream-warc-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function listFiles(dir: string): string[] {
  return readdirSync(dir).sort();
}

/** Reads one record the way a downstream consumer would: seek, read `length` bytes, gunzip. */
export function readAt(dir: string, loc: Pick<WarcLocation, 'file' | 'offset' | 'length'>): Buffer {
  const fd = openSync(join(dir, loc.file), 'r');
  try {
    const buf = Buffer.alloc(loc.length);
    const got = readSync(fd, buf, 0, loc.length, loc.offset);
    if (got !== loc.length) throw new Error(`short read at ${loc.file}@${loc.offset}: ${got} of ${loc.length}`);
    return gunzipSync(buf);
  } finally {
    closeSync(fd);
  }
}

export interface ParsedRecord {
  headers: Map<string, string>;
  block: Buffer;
}

/** Splits an uncompressed WARC record into its named fields and its block (Content-Length bytes). */
export function parseRecord(record: Buffer): ParsedRecord {
  const end = record.indexOf('\r\n\r\n');
  const lines = record.subarray(0, end).toString('utf8').split('\r\n');
  if (!lines[0]!.startsWith('WARC/1.1')) throw new Error(`not a WARC/1.1 record: ${lines[0]}`);
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim());
  }
  const length = Number(headers.get('content-length'));
  const block = record.subarray(end + 4, end + 4 + length);
  if (!record.subarray(end + 4 + length).equals(Buffer.from('\r\n\r\n')))
    throw new Error('record not closed by CRLF CRLF');
  return { headers, block };
}

/** The body of an HTTP message block: everything after the first blank line. */
export function httpBody(block: Buffer): Buffer {
  return block.subarray(block.indexOf('\r\n\r\n') + 4);
}

export function httpHead(block: Buffer): string {
  return block.subarray(0, block.indexOf('\r\n\r\n')).toString('latin1');
}

let counter = 0;

/** A plausible fetch of `url` with a deterministic pseudo-random body of `size` bytes. */
export function fetchOf(url: string, size: number): RequestResponseArgs {
  const payload = Buffer.alloc(size);
  let x = 2463534242 + counter++;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    payload[i] = x & 0xff;
  }
  const u = new URL(url);
  return {
    targetUri: url,
    date: new Date('2024-05-01T12:00:00.250Z'),
    ip: '192.0.2.10',
    requestHeaders: `GET ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\nUser-Agent: crawlstream-test\r\n\r\n`,
    statusLine: 'HTTP/1.1 200 OK',
    responseHeaders: [
      ['Content-Type', 'application/octet-stream'],
      ['Content-Length', String(size)],
    ],
    payload,
  };
}
