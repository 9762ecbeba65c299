import { CrawlError } from '../../core/errors.js';
import { isDiskFull } from '../../core/files.js';

/** Suffix of a WARC file while it is being written (or after a crash, until recovery). */
export const OPEN_SUFFIX = '.open';

/**
 * The final name of a WARC file: `<prefix>-<yyyyMMddHHmmssSSS>-<partition:5>-<seq:5>.warc.gz`,
 * with the UTC creation time, so names of one partition sort in writing order.
 */
export function warcFileName(prefix: string, createdMs: number, partition: number, seq: number): string {
  return `${prefix}-${formatStamp(createdMs)}-${pad(partition, 5)}-${pad(seq, 5)}.warc.gz`;
}

/** What a name of this prefix and partition says, final or `.open`; undefined for other files. */
export function parseWarcFileName(
  name: string,
  prefix: string,
  partition: number,
): { createdMs: number; seq: number; open: boolean } | undefined {
  const head = `${prefix}-`;
  if (!name.startsWith(head)) return undefined;
  const m = /^(\d{17})-(\d{5})-(\d{5,})\.warc\.gz(\.open)?$/.exec(name.slice(head.length));
  if (m === null || Number(m[2]) !== partition) return undefined;
  return { createdMs: stampMillis(m[1]!), seq: Number(m[3]), open: m[4] !== undefined };
}

/**
 * A failed write of `file` in `dir` as a CrawlError: CS_DISK_FULL, its message beginning
 * `disk full at <dir>`, when the disk or quota is full (the runtime then pauses the task until
 * space returns: runtime/resource-pause.ts); CS_INTERNAL otherwise.
 */
export function writeError(err: unknown, file: string, dir: string): CrawlError {
  const diskFull = isDiskFull(err);
  const what = `writing WARC file ${file} failed: ${String(err)}`;
  return new CrawlError(diskFull ? 'CS_DISK_FULL' : 'CS_INTERNAL', diskFull ? `disk full at ${dir}: ${what}` : what, {
    cause: err,
  });
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

function formatStamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:TZ.]/g, '');
}

function stampMillis(stamp: string): number {
  const s = (from: number, to: number) => stamp.slice(from, to);
  const ms = Date.parse(`${s(0, 4)}-${s(4, 6)}-${s(6, 8)}T${s(8, 10)}:${s(10, 12)}:${s(12, 14)}.${s(14, 17)}Z`);
  return Number.isNaN(ms) ? 0 : ms;
}
