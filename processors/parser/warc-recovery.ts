import { closeSync, fstatSync, ftruncateSync, fsyncSync, openSync, readSync } from 'node:fs';
import { crc32, inflateRawSync } from 'node:zlib';

// a member holds one record: payloads are capped at 10 MB, so windows rarely grow past 32 MB
const FIRST_WINDOW = 1 << 20;
const GZIP_TRAILER = 8;
const WARC_MAGIC = Buffer.from('WARC/1.');

/**
 * The byte length of the longest prefix of the file at `fd` that is a sequence of complete,
 * intact gzip members each holding a WARC record (CRC and size checked). A torn write at the
 * end of a crashed file stops the scan; so does anything that is not a gzip member.
 */
export function completeMembersLength(fd: number): number {
  const size = fstatSync(fd).size;
  let offset = 0;
  while (offset < size) {
    const end = memberEnd(fd, offset, size);
    if (end === undefined) break;
    offset = end;
  }
  return offset;
}

/**
 * Cuts a crashed WARC file back to its complete members and makes the cut durable.
 * Returns the new length (0 when not even one record survived).
 */
export function truncateToCompleteMembers(path: string): number {
  const fd = openSync(path, 'r+');
  try {
    const length = completeMembersLength(fd);
    if (length < fstatSync(fd).size) {
      ftruncateSync(fd, length);
      fsyncSync(fd);
    }
    return length;
  } finally {
    closeSync(fd);
  }
}

/** Up to `length` bytes of a file from `position`; fewer only where the file ends. */
export type ReadAt = (position: number, length: number) => Buffer;

/** One intact gzip member holding a WARC record: where it ends, and the record it inflates to. */
export interface Member {
  end: number;
  record: Buffer;
}

/**
 * The intact gzip member holding a WARC record at `offset` of a file of `size` bytes (CRC,
 * size and the WARC magic checked), or undefined when the bytes there are torn or not one.
 */
export function memberAt(readAt: ReadAt, offset: number, size: number): Member | undefined {
  let window = Math.min(FIRST_WINDOW, size - offset);
  for (;;) {
    const data = readAt(offset, window);
    const got = data.length;
    const headerLength = gzipHeaderLength(data);
    if (headerLength === 'corrupt') return undefined;
    if (headerLength === 'short') {
      // a header cut short by the end of the window may still be whole in a larger one
      if (got === size - offset) return undefined;
    } else {
      const result = tryInflate(data, headerLength);
      if (result === 'corrupt') return undefined;
      if (result !== 'short') return { end: offset + result.end, record: result.record };
      if (got === size - offset) return undefined;
    }
    window = Math.min(window * 2, size - offset);
  }
}

function memberEnd(fd: number, offset: number, size: number): number | undefined {
  const readAt: ReadAt = (position, length) => {
    const buf = Buffer.allocUnsafe(length);
    return buf.subarray(0, readFully(fd, buf, position));
  };
  return memberAt(readAt, offset, size)?.end;
}

function tryInflate(data: Buffer, headerLength: number): { end: number; record: Buffer } | 'short' | 'corrupt' {
  let inflated: { buffer: Buffer; engine: { bytesWritten: number } };
  try {
    inflated = inflateRawSync(data.subarray(headerLength), { info: true }) as unknown as typeof inflated;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'Z_BUF_ERROR' ? 'short' : 'corrupt';
  }
  const trailerAt = headerLength + inflated.engine.bytesWritten;
  if (trailerAt + GZIP_TRAILER > data.length) return 'short';
  const crc = data.readUInt32LE(trailerAt);
  const isize = data.readUInt32LE(trailerAt + 4);
  const out = inflated.buffer;
  if (isize !== out.length % 2 ** 32 || crc !== crc32(out)) return 'corrupt';
  if (!out.subarray(0, WARC_MAGIC.length).equals(WARC_MAGIC)) return 'corrupt';
  return { end: trailerAt + GZIP_TRAILER, record: out };
}

/** Length of the RFC 1952 member header at the start of `data`. */
function gzipHeaderLength(data: Buffer): number | 'short' | 'corrupt' {
  const magic = [0x1f, 0x8b, 8];
  for (let i = 0; i < magic.length; i++) {
    if (i >= data.length) return 'short';
    if (data[i] !== magic[i]) return 'corrupt';
  }
  if (data.length < 10) return 'short';
  const flags = data[3]!;
  let at = 10;
  if (flags & 0x04) {
    if (at + 2 > data.length) return 'short';
    at += 2 + data.readUInt16LE(at);
  }
  for (const flag of [0x08, 0x10]) {
    if (flags & flag) {
      const zero = data.indexOf(0, at);
      if (zero === -1) return 'short';
      at = zero + 1;
    }
  }
  if (flags & 0x02) at += 2;
  return at <= data.length ? at : 'short';
}

export function readFully(fd: number, buf: Buffer, position: number): number {
  let got = 0;
  while (got < buf.length) {
    const n = readSync(fd, buf, got, buf.length - got, position + got);
    if (n === 0) break;
    got += n;
  }
  return got;
}
