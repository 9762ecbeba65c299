import { closeSync, fsyncSync, openSync, readdirSync, renameSync, unlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { sha1Digest } from '../common/payload.js';
import { writeError } from './warc-files.js';
import { fsyncDir, writeAll } from '../../core/files.js';
import { isDefect, readWarcFile, type WarcRecord } from './warc-reader.js';
import { surt } from './surt.js';

/** Suffix of a WARC file's CDXJ index, which replaces `.warc.gz`. */
export const CDXJ_SUFFIX = '.cdxj';

/** `<base>.cdxj` for `<base>.warc.gz` (a `.open` suffix is ignored); the index lives beside its WARC. */
export function cdxjPathFor(warcPath: string): string {
  return warcPath.replace(/\.open$/, '').replace(/\.warc\.gz$/, '') + CDXJ_SUFFIX;
}

/** The JSON block of one CDXJ line, in pywb's field order; a field the record lacks is absent. */
export interface CdxjFields {
  url: string;
  mime?: string;
  status?: string;
  digest?: string;
  length: string;
  offset: string;
  filename: string;
}

/** One index line: what pywb looks up (SURT key, 14-digit timestamp) and what it reads. */
export interface CdxjEntry {
  key: string;
  timestamp: string;
  fields: CdxjFields;
}

// what cdxj-indexer indexes by default; warc-fields metadata and resource records are left out
const INDEXED_TYPES = new Set(['response', 'revisit', 'resource', 'metadata']);
const WARC_FIELDS = 'application/warc-fields';

/**
 * The index entries of a WARC file as pywb's `cdxj-indexer` (1.5) derives them with its default
 * fields, in file order: one per response, revisit, and resource or metadata record that is not
 * `application/warc-fields`. `filename` is what the lines name the file by (the final name, also
 * while the file still has its `.open` name). Stretches that are not intact records are skipped.
 */
export function* cdxjEntries(
  warcPath: string,
  filename = basename(warcPath).replace(/\.open$/, ''),
): Generator<CdxjEntry> {
  for (const r of readWarcFile(warcPath)) {
    if (isDefect(r)) continue;
    const entry = cdxjEntryOf(r, filename);
    if (entry !== undefined) yield entry;
  }
}

/**
 * The index entry of one record, or undefined for a record cdxj-indexer does not index. Only the
 * head of the block is read, except for a response without WARC-Payload-Digest.
 */
export function cdxjEntryOf(
  r: Pick<WarcRecord, 'type' | 'fields' | 'block' | 'offset' | 'length'>,
  filename: string,
): CdxjEntry | undefined {
  if (!INDEXED_TYPES.has(r.type)) return undefined;
  const contentType = r.fields.get('content-type');
  if ((r.type === 'resource' || r.type === 'metadata') && contentType === WARC_FIELDS) return undefined;
  const url = r.fields.get('warc-target-uri') ?? '';
  const head = r.type === 'response' || r.type === 'revisit' ? httpHead(r.block) : undefined;
  const mime = r.type === 'revisit' ? 'warc/revisit' : head !== undefined ? head.contentType : contentType;
  const digest = payloadDigest(r, head);
  // pywb's field order: url, mime, status, digest, length, offset, filename
  return {
    key: surt(url),
    timestamp: timestamp14(r.fields.get('warc-date') ?? ''),
    fields: {
      url,
      ...(mime !== undefined ? { mime: mimeType(mime) } : {}),
      ...(head?.status !== undefined ? { status: head.status } : {}),
      ...(digest !== undefined ? { digest } : {}),
      length: String(r.length),
      offset: String(r.offset),
      filename,
    },
  };
}

/** Bytes of one chunk of a builder's packed lines (~200 lines of ~300 bytes). */
const LINE_CHUNK_BYTES = 64 * 1024;

/**
 * The index lines of the file being written, collected as records are appended, so closing a
 * file costs a sort and a write instead of reading the file again (a 1 GiB file takes seconds to
 * inflate, during which the parser task would stand still). What it derives is what
 * `cdxjEntries` derives from the bytes: the same function reads the same fields and head.
 */
export class CdxjIndexBuilder {
  private readonly lines: Buffer[] = [];
  // the lines' bytes, packed into chunks of the builder's own: a line made by `Buffer.from` is a
  // slice of an 8 KiB pool slab shared with whatever was allocated beside it, and a file's index
  // held every slab its lines touched (~8 KiB a line in a crawl: 150 MiB at 19,000 records)
  private chunk = Buffer.alloc(0);
  private used = 0;
  private chunkBytes = 0;
  constructor(private readonly filename: string) {}

  /** Bytes the builder holds for its lines (the chunks they are packed in). */
  get bytes(): number {
    return this.chunkBytes;
  }

  /**
   * Adds a response or revisit record just written at `at` of this builder's file, with the HTTP
   * head it stored; `digest` is its WARC-Payload-Digest (absent for a revisit without one).
   */
  add(
    type: 'response' | 'revisit',
    uri: string,
    warcDate: string,
    digest: string | undefined,
    head: Buffer,
    at: { offset: number; length: number },
  ): void {
    const fields = new Map([
      ['warc-target-uri', uri],
      ['warc-date', warcDate],
      ['content-type', 'application/http;msgtype=response'],
    ]);
    if (digest !== undefined) fields.set('warc-payload-digest', digest);
    const entry = cdxjEntryOf({ type, fields, block: head, offset: at.offset, length: at.length }, this.filename);
    if (entry !== undefined) this.lines.push(this.pack(cdxjLine(entry)));
  }

  /** `line` as UTF-8 in the current chunk, a new one begun when it does not fit. */
  private pack(line: string): Buffer {
    const length = Buffer.byteLength(line, 'utf8');
    if (length > this.chunk.length - this.used) {
      this.chunk = Buffer.allocUnsafeSlow(Math.max(LINE_CHUNK_BYTES, length));
      this.chunkBytes += this.chunk.length;
      this.used = 0;
    }
    const at = this.used;
    this.used += this.chunk.write(line, at, 'utf8');
    return this.chunk.subarray(at, this.used);
  }

  /** Writes the index of `warcPath` (which must be this builder's file) as `writeCdxjIndex` does. */
  write(warcPath: string): { path: string; lines: number } {
    return writeCdxjLines(warcPath, this.lines);
  }
}

/** One CDXJ line as cdxj-indexer writes it (Python's `json.dumps`: `", "`/`": "` separators, ASCII only), with its newline. */
export function cdxjLine(e: CdxjEntry): string {
  const json = Object.entries(e.fields)
    .map(([k, v]) => `${pyJsonString(k)}: ${pyJsonString(v as string)}`)
    .join(', ');
  return `${e.key} ${e.timestamp} {${json}}\n`;
}

/**
 * Writes the CDXJ index of `warcPath` beside it (`<base>.cdxj`), its lines sorted bytewise as
 * pywb's binary search needs (what `cdxj-indexer --sort` writes). Atomic and durable: written to a
 * temporary name, fsynced, renamed, and the directory fsynced, so the index is either absent or
 * whole, also across a crash. Idempotent: indexing the same file again writes the same bytes.
 * Returns the index's path and line count. Throws CS_DISK_FULL/CS_INTERNAL like WARC writes.
 */
export function writeCdxjIndex(warcPath: string, filename?: string): { path: string; lines: number } {
  return writeCdxjLines(
    warcPath,
    [...cdxjEntries(warcPath, filename)].map((e) => Buffer.from(cdxjLine(e), 'utf8')),
  );
}

function writeCdxjLines(warcPath: string, lines: Buffer[]): { path: string; lines: number } {
  const sorted = [...lines].sort(Buffer.compare);
  const path = cdxjPathFor(warcPath);
  const tmp = `${path}.tmp`;
  const data = Buffer.concat(sorted);
  let fd: number | undefined;
  try {
    fd = openSync(tmp, 'w');
    writeAll(fd, [data], 0);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(tmp, path);
  } catch (err) {
    if (fd !== undefined) closeSync(fd);
    try {
      unlinkSync(tmp);
    } catch {
      // nothing to remove
    }
    throw writeError(err, basename(path), dirname(path) || '.');
  }
  fsyncDir(dirname(path) || '.');
  return { path, lines: sorted.length };
}

/** What warcio reads from an HTTP head: the status code and the first Content-Type. */
function httpHead(block: Buffer): { status?: string; contentType?: string } {
  const end = block.indexOf('\r\n\r\n');
  const lines = (end === -1 ? block : block.subarray(0, end)).toString('latin1').split(/\r?\n/);
  const status = /^\S+\s+(\S+)/.exec(lines[0] ?? '');
  let contentType: string | undefined;
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    if (line.slice(0, colon).trim().toLowerCase() === 'content-type') {
      contentType = line.slice(colon + 1).trim();
      break;
    }
  }
  return { ...(status !== null ? { status: status[1]! } : {}), ...(contentType !== undefined ? { contentType } : {}) };
}

/** cdxj-indexer keeps a Content-Type up to its first `;` or white space. */
function mimeType(value: string): string {
  return value.split(/[;\s]/, 1)[0]!.trim();
}

/** WARC-Payload-Digest; computed as warcio does when absent, except for revisits, which have no payload. */
function payloadDigest(
  r: Pick<WarcRecord, 'type' | 'fields' | 'block'>,
  head: { status?: string } | undefined,
): string | undefined {
  const stated = r.fields.get('warc-payload-digest');
  if (stated !== undefined || r.type === 'revisit') return stated;
  if (head === undefined) return sha1Digest(r.block);
  const end = r.block.indexOf('\r\n\r\n');
  return sha1Digest(end === -1 ? Buffer.alloc(0) : r.block.subarray(end + 4));
}

/** warcio's `iso_date_to_timestamp`: the WARC-Date's digits to the second, `yyyyMMddHHmmss`. */
function timestamp14(warcDate: string): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})/.exec(warcDate);
  return m === null ? warcDate.replace(/\D/g, '').padEnd(14, '0').slice(0, 14) : m.slice(1).join('');
}

/** Python's `json.dumps` of a string with `ensure_ascii`: every character past `~` as `\uXXXX`. */
function pyJsonString(s: string): string {
  return JSON.stringify(s).replace(/[\u007f-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

/**
 * Indexes a complete WARC still at its `.open` name (from `builder`'s lines when the writer
 * collected them, else by reading the file), then gives it its final name with `rename`.
 * The rename happens even when indexing fails (the archive matters more than its index); the
 * error is thrown after it, and the next `indexMissing` writes the index.
 */
export function indexClosedFile(openPath: string, rename: () => void, builder?: CdxjIndexBuilder): void {
  let failure: unknown;
  try {
    if (builder !== undefined) builder.write(openPath);
    else writeCdxjIndex(openPath);
  } catch (err) {
    failure = err;
  }
  rename();
  if (failure !== undefined) throw failure;
}

/**
 * Writes the index of each final-named WARC in `dir` for which `isOwn(name)` holds (names that
 * sort in writing order) that has none although it is the newest or an older one has one: its
 * indexing failed. Removes leftover temporary indexes. Older files without an index were written
 * before indexing was on and are left alone: indexing them would read every byte of an archive
 * that may be hundreds of GiB, at startup (`cdxj-indexer` indexes them offline). Returns the names
 * indexed.
 */
export function indexMissing(dir: string, isOwn: (warcName: string) => boolean): string[] {
  const names = new Set(readdirSync(dir));
  const own = [...names].filter(isOwn).sort();
  const done: string[] = [];
  let indexing = false;
  for (const [i, name] of own.entries()) {
    const index = basename(cdxjPathFor(name));
    if (names.has(`${index}.tmp`)) unlinkSync(join(dir, `${index}.tmp`));
    if (names.has(index)) indexing = true;
    else if (indexing || i === own.length - 1) {
      writeCdxjIndex(join(dir, name));
      done.push(name);
    }
  }
  return done;
}
