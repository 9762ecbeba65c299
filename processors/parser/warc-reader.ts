import { closeSync, fstatSync, openSync } from 'node:fs';
import { basename } from 'node:path';
import { memberAt, readFully } from './warc-recovery.js';
import { RENAMED_PREFIX } from './warc-records.js';

/** One WARC record read back from its gzip member. */
export interface WarcRecord {
  /** The file's name (no directory), as page records name it. */
  file: string;
  /** Byte offset and length of the record's gzip member in the file. */
  offset: number;
  length: number;
  /** WARC-Type, lowercase (`response`, `revisit`, `request`, `metadata`, `warcinfo`, …). */
  type: string;
  /** Named fields by lowercase name; the last value of a repeated field. */
  fields: Map<string, string>;
  /** The record block (Content-Length bytes after the header). Owned by the caller. */
  block: Buffer;
}

/** A stretch of a file that is not intact records: skipped, reported, counted. */
export interface WarcDefect {
  file: string;
  offset: number;
  /** Bytes skipped, up to the next intact record or the end of the file. */
  skipped: number;
  reason: string;
}

// one read fills this much of the window: records are small and syscalls add up, yet a merge keeps one window per file
const WINDOW_BYTES = 2 << 20;
const GZIP_MAGIC = Buffer.from([0x1f, 0x8b, 0x08]);

/**
 * Reads a `.warc.gz` file of one gzip member per record (what WarcWriter writes; any WARC 1.0 or
 * 1.1 file compressed per record), yielding records in file order. A member that does not
 * inflate to an intact record (torn, garbled, a CRC mismatch) is yielded as a WarcDefect and the
 * scan resumes at the next intact member, so one bad record never hides the rest. Reads through
 * a window of WINDOW_BYTES, so each byte is read from disk about once.
 */
export function* readWarcFile(path: string): Generator<WarcRecord | WarcDefect> {
  const fd = openSync(path, 'r');
  const file = basename(path);
  try {
    const size = fstatSync(fd).size;
    let winStart = 0;
    let win = Buffer.alloc(0);
    const readAt = (position: number, length: number): Buffer => {
      const end = Math.min(position + length, size);
      if (position < winStart || end > winStart + win.length) {
        const buf = Buffer.allocUnsafe(Math.max(end - position, Math.min(WINDOW_BYTES, size - position)));
        win = buf.subarray(0, readFully(fd, buf, position));
        winStart = position;
      }
      return win.subarray(position - winStart, end - winStart);
    };
    let offset = 0;
    while (offset < size) {
      const member = memberAt(readAt, offset, size);
      if (member !== undefined) {
        const record = parseRecord(member.record, file, offset, member.end - offset);
        if (record !== undefined) {
          yield record;
          offset = member.end;
          continue;
        }
      }
      const next = nextMember(readAt, offset + 1, size);
      yield { file, offset, skipped: next - offset, reason: 'not an intact gzip member holding a WARC record' };
      offset = next;
    }
  } finally {
    closeSync(fd);
  }
}

/** The offset of the next intact member from `from` on, or `size` when there is none. */
function nextMember(readAt: (position: number, length: number) => Buffer, from: number, size: number): number {
  let at = from;
  while (at < size) {
    const chunk = readAt(at, Math.min(WINDOW_BYTES, size - at));
    const hit = chunk.indexOf(GZIP_MAGIC);
    if (hit === -1) {
      // the magic may straddle the chunk's end
      at += Math.max(1, chunk.length - (GZIP_MAGIC.length - 1));
      continue;
    }
    if (memberAt(readAt, at + hit, size) !== undefined) return at + hit;
    at += hit + 1;
  }
  return size;
}

const HEADER_END = Buffer.from('\r\n\r\n');

function parseRecord(raw: Buffer, file: string, offset: number, length: number): WarcRecord | undefined {
  const headEnd = raw.indexOf(HEADER_END);
  if (headEnd === -1) return undefined;
  const lines = raw.subarray(0, headEnd).toString('utf8').split('\r\n');
  const fields = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) fields.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  const contentLength = Number(fields.get('content-length'));
  const blockStart = headEnd + HEADER_END.length;
  if (!Number.isSafeInteger(contentLength) || blockStart + contentLength > raw.length) return undefined;
  return {
    file,
    offset,
    length,
    type: (fields.get('warc-type') ?? '').toLowerCase(),
    fields,
    block: raw.subarray(blockStart, blockStart + contentLength),
  };
}

/** An HTTP response as a WARC response or revisit block stores it. */
export interface HttpResponse {
  /** `1.1` from `HTTP/1.1`; null when the status line names none. */
  httpVersion: string | null;
  status: number;
  /** In order, repeats kept, values as latin1 (HTTP's bytes); headers WarcWriter renamed get their names back. */
  headers: { name: string; value: string }[];
  /** The payload as stored (content coding kept); empty for a revisit. */
  payload: Buffer;
}

/** Parses a `application/http;msgtype=response` block; undefined when it is not one. */
export function parseHttpResponse(block: Buffer): HttpResponse | undefined {
  const headEnd = block.indexOf(HEADER_END);
  const head = (headEnd === -1 ? block : block.subarray(0, headEnd)).toString('latin1').split('\r\n');
  const status = /^HTTP\/(\S+)\s+(\d{3})/.exec(head[0] ?? '');
  if (status === null) return undefined;
  const headers: { name: string; value: string }[] = [];
  for (const line of head.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    let name = line.slice(0, colon).trim();
    if (name.length > RENAMED_PREFIX.length && name.toLowerCase().startsWith(RENAMED_PREFIX.toLowerCase()))
      name = name.slice(RENAMED_PREFIX.length);
    // the writer wrote `name: value`: the inverse keeps the value byte for byte
    headers.push({ name, value: line.slice(colon + 1).replace(/^ /, '') });
  }
  return {
    httpVersion: status[1] ?? null,
    status: Number(status[2]),
    headers,
    payload: headEnd === -1 ? Buffer.alloc(0) : block.subarray(headEnd + HEADER_END.length),
  };
}

/** Whether a reader result is a defect rather than a record. */
export function isDefect(r: WarcRecord | WarcDefect): r is WarcDefect {
  return (r as WarcDefect).skipped !== undefined;
}
