import {
  closeSync,
  existsSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  unlinkSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { CrawlError } from '../../core/errors.js';
import { fsyncDir, writeAll } from '../../core/files.js';
import { sha1Digest } from '../common/payload.js';
import { CdxjIndexBuilder, indexClosedFile, indexMissing } from './cdxj-index.js';
import { OPEN_SUFFIX, parseWarcFileName, warcFileName, writeError } from './warc-files.js';
import { truncateToCompleteMembers } from './warc-recovery.js';
import {
  gzipMember,
  newRecordId,
  warcDate,
  warcFieldsBlock,
  warcRecordParts,
  type MemberSpec,
} from './warc-records.js';

/** Where a record lives: its gzip member in a closed (or recoverable) WARC file. */
export interface WarcLocation {
  /** Final file name (never the `.open` name), relative to the writer's directory. */
  file: string;
  /** Byte offset of the record's gzip member. */
  offset: number;
  /** Byte length of the gzip member. */
  length: number;
  /** The record's WARC-Record-ID (`<urn:uuid:…>`), for revisits that refer to it. */
  recordId: string;
}

/** What a roll of WARC files is, checked beforehand (WarcWriterOptions, resolved). */
export interface WarcRollSettings {
  readonly dir: string;
  readonly prefix: string;
  readonly partition: number;
  readonly maxFileBytes: number;
  readonly software: string;
  readonly operator: string | undefined;
  readonly gzipLevel: number;
  readonly cdxj: boolean;
  readonly onFileClosed: ((name: string) => void) | undefined;
}

/** The file being written: its descriptor and name; `synced` is its size at the last fsync. */
interface OpenFile {
  fd: number;
  name: string;
  size: number;
  synced: number;
  /** Where its records begin, past its warcinfo record. */
  bodyStart: number;
  warcinfoId: string;
}

/**
 * The files of one writer (WarcWriter): each `<name>.open` while written, begun with a warcinfo
 * record, fsynced by `flush()`, rotated before records would push it past `maxFileBytes`, and at
 * its close indexed (when asked) and renamed to its final name; a crash's `.open` files are cut to
 * their last complete member and renamed by the next `open()`. Records reach it as gzip members
 * built for the open file's warcinfo record (`append`). Synchronous; one roll a (dir, prefix, partition).
 */
export class WarcRoll {
  private state: 'new' | 'open' | 'closed' = 'new';
  private nextSeq = 0;
  private lastStamp = 0;
  /** Wall-clock time of the last record appended (or of the open file's creation). */
  private lastAppendAt = 0;
  private current: OpenFile | undefined;
  /** The open file's index lines so far, when `cdxj`; undefined otherwise or with no file open. */
  private builder: CdxjIndexBuilder | undefined;

  constructor(private readonly s: WarcRollSettings) {}

  /** Where the lines of the records `append` just wrote go, when the roll indexes its files. */
  get index(): CdxjIndexBuilder | undefined {
    return this.builder;
  }

  /**
   * Creates `dir` if needed and recovers this writer's files left by a crash: each
   * `*.warc.gz.open` of the same prefix and partition is cut to its last complete gzip member
   * and renamed to its final name (deleted if no record survived). Files of other partitions are
   * never touched. The first file is created lazily, at the first record.
   */
  open(): void {
    if (this.state !== 'new') throw new CrawlError('CS_INTERNAL', `WarcWriter.open() called twice`);
    mkdirSync(this.s.dir, { recursive: true });
    let recovered = false;
    for (const name of readdirSync(this.s.dir)) {
      const parsed = parseWarcFileName(name, this.s.prefix, this.s.partition);
      if (parsed === undefined) continue;
      this.nextSeq = Math.max(this.nextSeq, parsed.seq + 1);
      this.lastStamp = Math.max(this.lastStamp, parsed.createdMs);
      if (!parsed.open) continue;
      const path = join(this.s.dir, name);
      if (truncateToCompleteMembers(path) === 0) unlinkSync(path);
      else this.finalize(path);
      recovered = true;
    }
    if (recovered) fsyncDir(this.s.dir);
    if (this.s.cdxj)
      indexMissing(this.s.dir, (name) => parseWarcFileName(name, this.s.prefix, this.s.partition)?.open === false);
    this.state = 'open';
  }

  /** Makes every record written so far durable (fsync of the current file, when it grew since the last). */
  flush(): void {
    const file = this.current;
    if (file === undefined || file.synced === file.size) return;
    fsyncSync(file.fd);
    file.synced = file.size;
  }

  /**
   * Milliseconds since the open file last got a record, at `now`; undefined when no file is open.
   * An uploader closes a quiet file (`closeFile()`) so the last records of an idle crawl leave.
   */
  openFileQuietMs(now: number): number | undefined {
    return this.current === undefined ? undefined : now - this.lastAppendAt;
  }

  /** Closes the open file, if any (as rotation does); the next record starts a new one. */
  closeFile(): void {
    if (this.state === 'open') this.finishFile();
  }

  /** Flushes and renames the current file to its final name. Idempotent. */
  close(): void {
    if (this.state === 'closed') return;
    this.finishFile();
    this.state = 'closed';
  }

  /**
   * Writes records built for the current file's warcinfo id, as adjacent members, rotating first
   * when they would push the file past maxFileBytes. Returns one location per record.
   */
  append(recordIds: string[], build: (warcinfoId: string) => MemberSpec[]): WarcLocation[] {
    if (this.state !== 'open') {
      throw new CrawlError('CS_INTERNAL', `WarcWriter is ${this.state === 'new' ? 'not open yet' : 'closed'}`);
    }
    let file = this.current ?? this.startFile();
    let members = build(file.warcinfoId).map((r) =>
      gzipMember(r.parts, this.s.gzipLevel, r.storedPart, r.deflatedPart),
    );
    const total = members.reduce((n, m) => n + m.length, 0);
    if (file.size > file.bodyStart && file.size + total > this.s.maxFileBytes) {
      this.finishFile();
      file = this.startFile();
      // the records name their file's warcinfo record, so they are built again for the new file
      members = build(file.warcinfoId).map((r) => gzipMember(r.parts, this.s.gzipLevel, r.storedPart, r.deflatedPart));
    }
    const locations: WarcLocation[] = [];
    const start = file.size;
    this.lastAppendAt = Date.now();
    try {
      let at = start;
      for (const [i, member] of members.entries()) {
        locations.push({ file: file.name, offset: at, length: member.length, recordId: recordIds[i]! });
        at += member.length;
      }
      // one call for the record's members (a response, its request, its metadata)
      writeAll(file.fd, members, start);
      file.size = at;
    } catch (err) {
      this.abandonTail(start);
      throw writeError(err, file.name, this.s.dir);
    }
    return locations;
  }

  private startFile(): OpenFile {
    // names must sort in writing order even if the wall clock steps back
    const stamp = Math.max(Date.now(), this.lastStamp);
    this.lastStamp = stamp;
    const name = warcFileName(this.s.prefix, stamp, this.s.partition, this.nextSeq++);
    const fd = openSync(join(this.s.dir, name + OPEN_SUFFIX), 'wx');
    const warcinfoId = newRecordId();
    const info: Record<string, string> = {
      software: this.s.software,
      format: 'WARC File Format 1.1',
      conformsTo: 'http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/',
      hostname: hostname(),
    };
    if (this.s.operator !== undefined) info.operator = this.s.operator;
    const block = warcFieldsBlock(info);
    const member = gzipMember(
      warcRecordParts(
        [
          ['WARC-Type', 'warcinfo'],
          ['WARC-Record-ID', warcinfoId],
          ['WARC-Date', warcDate(new Date(stamp))],
          ['WARC-Filename', name],
          ['WARC-Block-Digest', sha1Digest(block)],
          ['Content-Type', 'application/warc-fields'],
        ],
        [block],
      ),
      this.s.gzipLevel,
    );
    try {
      writeAll(fd, [member], 0);
    } catch (err) {
      closeSync(fd);
      unlinkSync(join(this.s.dir, name + OPEN_SUFFIX));
      throw writeError(err, name, this.s.dir);
    }
    // the new directory entry must survive a crash for flushed records in it to be found
    fsyncDir(this.s.dir);
    this.current = { fd, name, size: member.length, synced: 0, bodyStart: member.length, warcinfoId };
    this.lastAppendAt = Date.now();
    this.builder = this.s.cdxj ? new CdxjIndexBuilder(name) : undefined;
    return this.current;
  }

  private finishFile(): void {
    const file = this.current;
    if (file === undefined) return;
    this.current = undefined;
    fsyncSync(file.fd);
    closeSync(file.fd);
    let indexFailure: unknown;
    try {
      this.finalize(join(this.s.dir, file.name + OPEN_SUFFIX), this.builder);
    } catch (err) {
      // an index that could not be written (a full disk) still leaves the file renamed: it is
      // closed and announced like any other; the next open() writes the missing index
      if (!existsSync(join(this.s.dir, file.name))) throw err;
      indexFailure = err;
    }
    fsyncDir(this.s.dir);
    this.s.onFileClosed?.(file.name);
    if (indexFailure !== undefined) throw indexFailure;
  }

  /** Gives a complete `.open` file its final name, indexing it first when asked to (from `index` when collected). */
  private finalize(openPath: string, index?: CdxjIndexBuilder): void {
    const finalPath = openPath.slice(0, -OPEN_SUFFIX.length);
    if (this.s.cdxj) indexClosedFile(openPath, () => renameSync(openPath, finalPath), index);
    else renameSync(openPath, finalPath);
  }

  /** After a failed write: cut the torn member off, or leave the file to recovery if that fails. */
  private abandonTail(size: number): void {
    const file = this.current!;
    try {
      ftruncateSync(file.fd, size);
      file.size = size;
      // the cut is made durable by the next flush
      file.synced = -1;
    } catch {
      // the next open() cuts the torn member; later records go to a fresh file
      this.current = undefined;
      try {
        closeSync(file.fd);
      } catch {
        // already unusable
      }
    }
  }
}
