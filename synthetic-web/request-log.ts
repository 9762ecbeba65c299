import { readFileSync } from 'node:fs';
import { CrawlError } from '../core/errors.js';
import type { Scheme } from './origins.js';

/** One finished request as the server saw it; the politeness checker's only input. */
export interface RequestLogEntry {
  /** 1-based, in order of arrival. */
  seq: number;
  /** Host header's name, lowercased, port stripped; '' when absent. */
  host: string;
  /** The scheme the request came in on; absent in logs written before the https origin (http). */
  scheme?: Scheme;
  method: string;
  /** Path and query exactly as requested. */
  path: string;
  /** Epoch ms (fractional) when the request's headers had arrived. */
  start: number;
  /**
   * How late `start` may be (ms): the web stamps a request when its loop gets to it, which a
   * stalled or busy loop delays (loop-turns.ts). Absent in logs written before it was kept.
   */
  startSlack?: number;
  /**
   * Epoch ms when the response was complete: when its last byte went to the socket (taken just
   * before a write the kernel took whole at once, over TLS too), else when it finished sending, or when the
   * connection closed before that. Not the moment this process noticed: on a busy machine the
   * client, woken by the write, may run for tens of ms before the server's 'finish' callback does,
   * and a late end would make a polite gap look short.
   */
  end: number;
  /** Status sent; 0 when the client went away before the headers were sent. */
  status: number;
  /** Body bytes sent, after content encoding. */
  bytes: number;
  /** From the Retry-After header sent, when it was a number of seconds. */
  retryAfterSec?: number;
  /** The Retry-After header sent, as sent: delay-seconds or an HTTP-date. */
  retryAfter?: string;
  userAgent?: string;
  /** The request's If-None-Match header, as sent. */
  ifNoneMatch?: string;
  /** The request's If-Modified-Since header, as sent. */
  ifModifiedSince?: string;
  /** The connection closed before the response finished. */
  aborted?: boolean;
  /** The server address the request came in on (`SiteSpec.address`; absent in older logs: 127.0.0.1). */
  address?: string;
}

/**
 * Reads a `logFile` written by `SyntheticWeb`, entries in the order they finished. Throws CS_CORRUPT_RECORD naming the line
 * when a line is not a log entry.
 */
export function readRequestLog(file: string): RequestLogEntry[] {
  const entries: RequestLogEntry[] = [];
  const lines = readFileSync(file, 'utf8').split('\n');
  for (const [i, line] of lines.entries()) {
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      throw new CrawlError('CS_CORRUPT_RECORD', `${file}:${i + 1}: not JSON`, { cause: err });
    }
    if (!isEntry(value)) throw new CrawlError('CS_CORRUPT_RECORD', `${file}:${i + 1}: not a request log entry`);
    entries.push(value);
  }
  return entries;
}

function isEntry(v: unknown): v is RequestLogEntry {
  if (typeof v !== 'object' || v === null) return false;
  const e = v as Record<string, unknown>;
  return (
    ['seq', 'start', 'end', 'status', 'bytes'].every((k) => typeof e[k] === 'number') &&
    ['host', 'method', 'path'].every((k) => typeof e[k] === 'string')
  );
}
