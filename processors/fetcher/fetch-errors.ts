import { CrawlError, type CrawlErrorCode } from '../../core/errors.js';

// How a failed fetch is told apart: the error classes of undici, sockets, TLS and the HTTP parser,
// each mapped to one stable CrawlError code.

const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'EADDRNOTAVAIL',
]);
const RESET_CODES = new Set([
  'ECONNRESET',
  'EPIPE',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
]);
const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
]);

/** Maps an undici / socket / TLS error (or its causes) to a stable code and a message for people. */
export function classifyError(err: unknown): { code: CrawlErrorCode; message: string } {
  const message = describe(err);
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof CrawlError) return { code: e.code, message: e.message };
    const code = (e as NodeJS.ErrnoException).code ?? '';
    if (TIMEOUT_CODES.has(code)) return { code: 'CS_TIMEOUT', message };
    if (isTlsError(e, code)) return { code: 'CS_TLS', message };
    if (CONNECT_CODES.has(code)) return { code: 'CS_CONNECT', message };
    if (code.startsWith('HPE_') || code === 'UND_ERR_HEADERS_OVERFLOW' || e.name === 'HTTPParserError')
      return { code: 'CS_HTTP', message };
  }
  // checked after the whole chain: undici wraps TLS and refusal causes in generic socket errors
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (RESET_CODES.has((e as NodeJS.ErrnoException).code ?? '')) return { code: 'CS_RESET', message };
  }
  return { code: 'CS_INTERNAL', message };
}

function isTlsError(e: Error, code: string): boolean {
  return (
    code.startsWith('ERR_TLS_') ||
    code.startsWith('ERR_SSL_') ||
    code.startsWith('CERT_') ||
    code.startsWith('UNABLE_TO_') ||
    code === 'DEPTH_ZERO_SELF_SIGNED_CERT' ||
    code === 'SELF_SIGNED_CERT_IN_CHAIN' ||
    code === 'HOSTNAME_MISMATCH' ||
    'library' in e // OpenSSL errors carry library/reason
  );
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as NodeJS.ErrnoException).code;
  const cause = err.cause instanceof Error ? `; cause: ${describe(err.cause)}` : '';
  return `${code ? `${code}: ` : ''}${err.message}${cause}`;
}
