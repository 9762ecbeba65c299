import type { FetchedPage } from '../../../schemas/types.js';

/**
 * A FetchedPage as a fetcher reports one: a 200 HTML page fetched over HTTP/1.1 from 127.0.0.1,
 * at depth 1 on its first attempt, its site the host, no body; `over` replaces any field.
 */
export function fetchedPageFor(url: string, over: Partial<FetchedPage> = {}): FetchedPage {
  const u = new URL(url);
  return {
    leaseId: `l-${url}`,
    url,
    host: u.hostname,
    site: u.hostname,
    depth: 1,
    redirectHops: 0,
    attempt: 1,
    fetchedAt: Date.now(),
    durationMs: 20,
    status: 200,
    httpVersion: '1.1',
    requestHead: `GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\n\r\n`,
    headers: [{ name: 'Content-Type', value: 'text/html; charset=utf-8' }],
    body: Buffer.alloc(0),
    truncated: false,
    remoteAddress: '127.0.0.1',
    errorCode: null,
    errorMessage: null,
    redirectTarget: null,
    kind: 'PAGE',
    ...over,
  };
}
