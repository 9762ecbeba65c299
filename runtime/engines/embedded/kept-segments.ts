import {
  closeSync,
  fdatasyncSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  unlinkSync,
} from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { CrawlError } from '../../../core/errors.js';
import { fsyncDir, isDiskFull, writeAll } from '../../../core/files.js';

/** A segment is closed and the next one begun once it holds about this much. */
export const SEGMENT_BYTES = 256 * 2 ** 20;

/**
 * The first 8 bytes of a pointer stored in the log's database in place of a record. An inline
 * record begins with its timestamp, a big-endian double; these bytes are a NaN, never a timestamp.
 */
const POINTER_TAG = Buffer.from([0xff, 0xff, 0x6b, 0x65, 0x70, 0x74, 0x00, 0x01]);
/** tag | segment u32 | position u64 | length u32 | crc32 u32 */
const POINTER_BYTES = POINTER_TAG.length + 4 + 8 + 4 + 4;

/** Segment files kept open for reading at most. */
const READ_FDS = 16;

/** Where the committed bytes of the segments end: the log stores it in the batch of every commit that appends here. */
export interface KeptMark {
  readonly segment: number;
  readonly position: number;
}

/** Records written to a segment but not yet committed: `advance` once the log's batch holding `pointers` and `mark` is durable. */
export interface Placement {
  readonly pointers: readonly Buffer[];
  readonly mark: KeptMark;
}

/**
 * The append-only files that hold the records of the log's kept topics (`page-records`,
 * `page-content`: retention never deletes them) outside RocksDB, so that a kept record is written
 * once, not rewritten by every compaction that merges its SST file. The log's database holds a
 * pointer in each such record's place (segment, position, length, CRC-32), written in the same
 * batch as the commit's other appends and the segments' committed end (`KeptMark`).
 *
 * Durability: `place` writes and fdatasyncs the records before the log's batch is written, so a
 * durable pointer always points at durable bytes. Bytes past the committed mark (a commit whose
 * batch failed, or a crash between the two writes) are never pointed at; the next commit writes
 * over them and opening cuts them off. Single-writer, like the log; not thread-safe.
 */
export class KeptSegments {
  private writeFd: number | undefined;
  /** The next segment, opened by a placement that rolled over and not yet advanced to. */
  private next: { segment: number; fd: number } | undefined;
  private readonly readFds = new Map<number, number>();

  private constructor(
    private readonly dir: string,
    private committed: KeptMark,
    private readonly segmentBytes: number,
  ) {}

  /**
   * Opens the segments in `dir` at the committed `mark` (undefined: nothing committed yet): bytes
   * past it are cut off and later segments removed, so appends go on where the last durable commit
   * ended. A segment is closed at about `segmentBytes`. Throws CS_STORE when the directory cannot
   * be read or changed, CS_DISK_FULL when its disk is full.
   */
  static open(dir: string, mark: KeptMark | undefined, segmentBytes = SEGMENT_BYTES): KeptSegments {
    const committed = mark ?? { segment: 1, position: 0 };
    ioStep(dir, 'open', () => {
      mkdirSync(dir, { recursive: true });
      for (const name of readdirSync(dir)) {
        const n = segmentNumber(name);
        if (n !== undefined && n > committed.segment) unlinkSync(join(dir, name));
      }
    });
    const segments = new KeptSegments(dir, committed, segmentBytes);
    const fd = segments.openForWrite(committed.segment, false);
    // a segment shorter than its mark lost bytes outside the crawler: appends go on at the mark
    // and the pointers into the lost range read as corrupt records
    ioStep(dir, 'cut', () => {
      if (fstatSync(fd).size > committed.position) ftruncateSync(fd, committed.position);
    });
    segments.writeFd = fd;
    return segments;
  }

  /** Whether a stored value is a pointer into the segments rather than an inline record. */
  static isPointer(value: Buffer): boolean {
    return value.length === POINTER_BYTES && value.subarray(0, POINTER_TAG.length).equals(POINTER_TAG);
  }

  /** Where the committed bytes end. */
  get mark(): KeptMark {
    return this.committed;
  }

  /**
   * Writes `records` after the committed end (a new segment when the current one is full) and
   * makes them durable; returns their pointers and the mark to commit. Nothing moves until
   * `advance`: a placement that is never advanced is written over by the next. Throws
   * CS_DISK_FULL on a full disk, CS_STORE on any other write error.
   */
  place(records: readonly Buffer[]): Placement {
    let total = 0;
    for (const r of records) total += r.length;
    let { segment, position } = this.committed;
    let fd = this.writeFd!;
    if (position > 0 && position + total > this.segmentBytes) {
      segment++;
      position = 0;
      // opened once, here, so that advancing (after the batch is durable) cannot fail
      this.next ??= { segment, fd: this.openForWrite(segment, true) };
      fd = this.next.fd;
    }
    const pointers: Buffer[] = [];
    let at = position;
    for (const r of records) {
      pointers.push(pointer(segment, at, r.length, crc32(r)));
      at += r.length;
    }
    ioStep(this.dir, 'write', () => {
      writeAll(fd, records, position);
      fdatasyncSync(fd);
    });
    return { pointers, mark: { segment, position: at } };
  }

  /** Moves the committed end to a placement whose batch is durable. Never throws. */
  advance(placement: Placement): void {
    if (placement.mark.segment !== this.committed.segment && this.next !== undefined) {
      const old = this.writeFd;
      this.writeFd = this.next.fd;
      this.next = undefined;
      if (old !== undefined) closeQuietly(old);
    }
    this.committed = placement.mark;
  }

  /**
   * The record a pointer names, in a buffer of its own. Throws CS_CORRUPT_RECORD when its bytes
   * are missing or do not match its checksum.
   */
  read(value: Buffer): Buffer {
    const segment = value.readUInt32BE(8);
    const position = Number(value.readBigUInt64BE(12));
    const length = value.readUInt32BE(20);
    const crc = value.readUInt32BE(24);
    const out = Buffer.allocUnsafeSlow(length);
    let got: number;
    try {
      got = readSync(this.readFd(segment), out, 0, length, position);
    } catch (err) {
      throw new CrawlError(
        'CS_CORRUPT_RECORD',
        `kept segment ${segment} cannot be read at ${position}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    if (got !== length || crc32(out) !== crc)
      throw new CrawlError(
        'CS_CORRUPT_RECORD',
        `kept segment ${segment} at ${position}: ${got !== length ? `${got} of ${length} bytes` : 'checksum mismatch'}`,
      );
    return out;
  }

  close(): void {
    if (this.writeFd !== undefined) closeQuietly(this.writeFd);
    if (this.next !== undefined) closeQuietly(this.next.fd);
    this.writeFd = undefined;
    this.next = undefined;
    for (const fd of this.readFds.values()) closeQuietly(fd);
    this.readFds.clear();
  }

  private readFd(segment: number): number {
    let fd = this.readFds.get(segment);
    if (fd !== undefined) {
      // most recently used last
      this.readFds.delete(segment);
      this.readFds.set(segment, fd);
      return fd;
    }
    fd = openSync(join(this.dir, segmentName(segment)), 'r');
    this.readFds.set(segment, fd);
    if (this.readFds.size > READ_FDS) {
      const [oldest, oldFd] = this.readFds.entries().next().value as [number, number];
      this.readFds.delete(oldest);
      closeQuietly(oldFd);
    }
    return fd;
  }

  /** Opens segment `n` for writing, created when missing (emptied first when `fresh`); a new file's directory entry is made durable. */
  private openForWrite(n: number, fresh: boolean): number {
    return ioStep(this.dir, 'open', () => {
      const path = join(this.dir, segmentName(n));
      let fd: number;
      let created = fresh;
      try {
        fd = openSync(path, fresh ? 'w+' : 'r+');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        fd = openSync(path, 'w+');
        created = true;
      }
      if (created) fsyncDir(this.dir);
      return fd;
    });
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // a descriptor that fails to close holds nothing the log still needs
  }
}

/** Encodes a mark for the log's database. */
export function encodeMark(mark: KeptMark): Buffer {
  const b = Buffer.allocUnsafe(12);
  b.writeUInt32BE(mark.segment, 0);
  b.writeBigUInt64BE(BigInt(mark.position), 4);
  return b;
}

/** Decodes a stored mark; undefined when none was stored. */
export function decodeMark(b: Buffer | undefined): KeptMark | undefined {
  if (b === undefined) return undefined;
  if (b.length !== 12)
    throw new CrawlError('CS_STORE_CORRUPT', `the kept segments' mark has ${b.length} bytes, not 12`);
  return { segment: b.readUInt32BE(0), position: Number(b.readBigUInt64BE(4)) };
}

function pointer(segment: number, position: number, length: number, crc: number): Buffer {
  const b = Buffer.allocUnsafe(POINTER_BYTES);
  POINTER_TAG.copy(b, 0);
  b.writeUInt32BE(segment, 8);
  b.writeBigUInt64BE(BigInt(position), 12);
  b.writeUInt32BE(length, 20);
  b.writeUInt32BE(crc, 24);
  return b;
}

function segmentName(n: number): string {
  return `${String(n).padStart(10, '0')}.seg`;
}

function segmentNumber(name: string): number | undefined {
  const m = /^(\d{10})\.seg$/.exec(name);
  return m === null ? undefined : Number(m[1]);
}

/** Runs a file system step, reporting a full disk as CS_DISK_FULL and any other failure as CS_STORE. */
function ioStep<T>(dir: string, what: string, step: () => T): T {
  try {
    return step();
  } catch (err) {
    if (err instanceof CrawlError) throw err;
    const full = isDiskFull(err);
    throw new CrawlError(
      full ? 'CS_DISK_FULL' : 'CS_STORE',
      `kept segments in ${dir}: ${what} failed${full ? ': disk full' : ''}: ${(err as Error).message}`,
      { cause: err },
    );
  }
}
