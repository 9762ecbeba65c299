import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { readFileSync } from 'node:fs';

// A naive impolite crawler, the yardstick of #37: fetch, find links with a regex, fetch those, as
// fast as a keep-alive pool allows. No robots.txt, no per-host or per-address limits, no storage,
// no parsing beyond `href="…"`, a Set of the URLs seen. It connects only to the loopback addresses
// its config maps host names to; a URL of any other host is dropped, never resolved.
// Run as its own process (its CPU is measured like the crawler's): node dist/bench/naive-crawler.js CONFIG.json

/** What bench/crawl.ts hands the naive crawler. */
export interface NaiveCrawlerConfig {
  readonly seeds: readonly string[];
  /** Host name → IPv4 loopback address: the only names it resolves. */
  readonly addresses: Readonly<Record<string, string>>;
  /** PEM of the CA that signed the web's certificates; '' when the process trusts it already (NODE_EXTRA_CA_CERTS). */
  readonly caPem: string;
  /** Requests in flight at once, over all hosts. */
  readonly concurrency: number;
}

const MAX_REDIRECTS = 5;
const HREF = /href="([^"]*)"/g;

/** Validates a config read from JSON, with a message naming the field. */
function checkConfig(value: unknown): NaiveCrawlerConfig {
  const c = value as Partial<NaiveCrawlerConfig>;
  if (!Array.isArray(c.seeds) || c.seeds.some((s) => typeof s !== 'string'))
    throw new Error('naive crawler config: seeds must be an array of URLs');
  if (typeof c.addresses !== 'object' || c.addresses === null)
    throw new Error('naive crawler config: addresses must map host names to loopback addresses');
  for (const [host, address] of Object.entries(c.addresses))
    if (!/^127\.\d+\.\d+\.\d+$/.test(address))
      throw new Error(`naive crawler config: ${host} maps to ${JSON.stringify(address)}, not a 127.0.0.0/8 address`);
  if (typeof c.caPem !== 'string') throw new Error('naive crawler config: caPem must be a PEM string');
  if (!Number.isInteger(c.concurrency) || c.concurrency! < 1)
    throw new Error(`naive crawler config: concurrency must be a positive integer, got ${String(c.concurrency)}`);
  return c as NaiveCrawlerConfig;
}

/** Crawls from the seeds until nothing is left; resolves with counts of what it did. */
export async function naiveCrawl(config: NaiveCrawlerConfig): Promise<{ pages: number; errors: number }> {
  // a Map, not the config's object: a link to a host named like an Object.prototype member must not resolve
  const addresses = new Map(Object.entries(config.addresses));
  const lookup: LookupFunction = (hostname, options, callback) => {
    const address = addresses.get(hostname.toLowerCase());
    if (address === undefined) {
      callback(Object.assign(new Error(`${hostname} is not a host of the test web`), { code: 'ENOTFOUND' }), '', 4);
    } else if (options.all) {
      (callback as unknown as (err: null, all: { address: string; family: number }[]) => void)(null, [
        { address, family: 4 },
      ]);
    } else callback(null, address, 4);
  };
  // two idle sockets a host, not 64: the web keeps an idle connection 15 s, and a crawl touching
  // thousands of hosts a second left ~19,000 of them open on its side, past its process's 20,000
  // files: its listener then accepted and dropped connections (libuv's EMFILE fallback), 19,011
  // requests failed with "socket hang up", and the crawl ended at 20,340 of 36,000 pages
  const agentOptions = { keepAlive: true, maxSockets: 64, maxFreeSockets: 2, lookup };
  const httpAgent = new HttpAgent(agentOptions);
  const httpsAgent = new HttpsAgent({ ...agentOptions, ...(config.caPem === '' ? {} : { ca: config.caPem }) });
  const seen = new Set<string>();
  const queue: URL[] = [];
  const admit = (href: string, base: URL | undefined): void => {
    let url: URL;
    try {
      url = base === undefined ? new URL(href) : new URL(href, base);
    } catch {
      return;
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !addresses.has(url.hostname)) return;
    url.hash = '';
    const key = url.href;
    if (seen.has(key)) return;
    seen.add(key);
    queue.push(url);
  };
  for (const seed of config.seeds) admit(seed, undefined);

  let pages = 0;
  let errors = 0;
  const get = (url: URL): Promise<{ status: number; location?: string; html?: string }> =>
    new Promise((resolve, reject) => {
      const https = url.protocol === 'https:';
      const req = (https ? httpsRequest : httpRequest)(
        url,
        { agent: https ? httpsAgent : httpAgent, headers: { 'user-agent': 'naive-crawler' } },
        (res: IncomingMessage) => {
          const status = res.statusCode ?? 0;
          const html = status === 200 && (res.headers['content-type'] ?? '').startsWith('text/html');
          if (!html) {
            res.resume();
            res.once('end', () =>
              resolve({ status, ...(res.headers.location ? { location: res.headers.location } : {}) }),
            );
            return;
          }
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.once('end', () => resolve({ status, html: Buffer.concat(chunks).toString('utf8') }));
          res.once('error', reject);
        },
      );
      req.once('error', reject);
      req.end();
    });

  const fetchOne = async (url: URL): Promise<void> => {
    try {
      let at = url;
      for (let hop = 0; ; hop++) {
        const reply = await get(at);
        if (reply.location !== undefined && reply.status >= 300 && reply.status < 400 && hop < MAX_REDIRECTS) {
          const next = new URL(reply.location, at);
          next.hash = '';
          // a redirect target seen already was (or will be) fetched on its own
          if (seen.has(next.href) || !addresses.has(next.hostname)) break;
          seen.add(next.href);
          at = next;
          continue;
        }
        if (reply.html !== undefined) {
          pages++;
          for (const m of reply.html.matchAll(HREF)) admit(m[1]!.replaceAll('&amp;', '&'), at);
        }
        break;
      }
    } catch {
      errors++;
    }
  };
  // keeps `concurrency` fetches in flight while there are URLs; done when none is queued or in flight
  await new Promise<void>((resolve) => {
    let inFlight = 0;
    const pump = (): void => {
      while (inFlight < config.concurrency && queue.length > 0) {
        inFlight++;
        void fetchOne(queue.shift()!).then(() => {
          inFlight--;
          pump();
        });
      }
      if (inFlight === 0 && queue.length === 0) resolve();
    };
    pump();
  });
  httpAgent.destroy();
  httpsAgent.destroy();
  return { pages, errors };
}

if (process.argv[1]?.endsWith('naive-crawler.js') && process.argv[2] !== undefined) {
  const config = checkConfig(JSON.parse(readFileSync(process.argv[2], 'utf8')));
  const started = performance.now();
  const { pages, errors } = await naiveCrawl(config);
  // on stderr, which the bench passes on: its failures must show
  process.stderr.write(
    `naive crawler: ${pages} pages, ${errors} errors in ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
  );
}
