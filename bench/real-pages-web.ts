import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PORT, prose, type PageSpec, type SiteSpec } from '../synthetic-web/sites.js';
import { HTTPS_PORT } from '../synthetic-web/origins.js';
import { seededRandom } from '../synthetic-web/seeded-random.js';
import { makeHostCertificates, makeTestCertificates, type HostCertificate } from '../synthetic-web/tls.js';

/**
 * The web of the end-to-end bench: `sites` sites of `pages` pages each, every site a seed whose home
 * links its pages and three other sites. The classic shape (issue #18) puts every host on
 * 127.0.0.1 over http with ~1.5 KB pages; the real shape (#37) adds what a real crawl pays for:
 * pages of `pageKb` KiB, `httpsShare` of the hosts https-only (their http origin answers 301 to
 * https, and one of the three links to each arrives over http), a robots.txt per origin, and the
 * hosts drawn over `addresses` loopback addresses (127.1.x.y), several hosts sharing each.
 */
export interface BenchWebShape {
  readonly sites: number;
  readonly pages: number;
  /** Pages of about this many KiB of HTML (distinct prose); 0 keeps ~1.5 KB pages. */
  readonly pageKb: number;
  /** 0 (every host on 127.0.0.1) or more addresses to draw the hosts over. */
  readonly addresses: number;
  /** Share (0 to 1) of hosts that are https-only; needs `certDir`. */
  readonly httpsShare: number;
  /** Whether every site serves a robots.txt (otherwise robots.txt is 404: allow all). */
  readonly robots: boolean;
  /** Appended to every host name (Kafka runs keep state on the broker, so each run needs its own). */
  readonly hostSuffix?: string;
}

export interface BenchWeb {
  readonly sites: SiteSpec[];
  /** Hosts that are https-only. */
  readonly httpsHosts: ReadonlySet<string>;
  readonly total: number;
}

const ROBOTS = 'User-agent: *\nDisallow: /private/\n';
// a real certificate names a few hosts (a site and its aliases, or a small SAN bundle), not thousands
const HOSTS_PER_CERTIFICATE = 10;

/** The web of `shape`; deterministic. */
export function benchWeb(shape: BenchWebShape): BenchWeb {
  const name = (i: number) => `c${String(i).padStart(5, '0')}${shape.hostSuffix ?? ''}.test`;
  // spread evenly: site i is https when the running share crosses a whole number at i
  const https = (i: number) => Math.floor((i + 1) * shape.httpsShare) > Math.floor(i * shape.httpsShare);
  const random = seededRandom(shape.addresses + 37);
  const httpsHosts = new Set<string>();
  const sites = Array.from({ length: shape.sites }, (_, i): SiteSpec => {
    const paths = Array.from({ length: shape.pages - 1 }, (_, j) => `/page-${j}.html`);
    // the third link always names http, as links on the real web often do: to an https-only
    // host it costs a redirect and that origin's own robots.txt
    const others = [1, 17, 331].map((d, k) => {
      const j = (i + d) % shape.sites;
      return https(j) && k < 2 ? `https://${name(j)}:${HTTPS_PORT}/` : `http://${name(j)}:${PORT}/`;
    });
    const pages: Record<string, PageSpec> = {
      '/': { title: `${name(i)} home`, links: [...paths, ...others, ...(shape.robots ? ['/private/'] : [])] },
    };
    for (const p of paths) {
      const own = ownParagraph(`${name(i)}${p}`, shape.pageKb);
      pages[p] = {
        title: `${name(i)} ${p}`,
        links: ['/', paths[0]!],
        // put together when served: 36,000 pages of 24 KiB held whole would take ~1 GB of the bench's memory
        get html() {
          return filler(own, shape.pageKb);
        },
      };
    }
    if (https(i)) httpsHosts.add(name(i));
    return {
      host: name(i),
      seed: true,
      pages,
      ...(shape.robots ? { robots: { status: 200, body: ROBOTS } } : {}),
      ...(https(i) ? { origins: { httpToHttps: true } } : {}),
      ...(shape.addresses > 0 ? { address: addressOf(Math.floor(random() * shape.addresses)) } : {}),
    };
  });
  return { sites, httpsHosts, total: shape.sites * shape.pages };
}

/** The k-th address of the bench web (0-based): 127.1.x.y, never 127.0.0.1. */
function addressOf(k: number): string {
  return `127.1.${Math.floor(k / 250)}.${1 + (k % 250)}`;
}

// a page's own paragraph and the rest drawn from a pool: distinct pages (two share ~0.1 paragraph
// on average, far from near-duplicates) at a fraction of the time, 4,000 × 9 pages of 24 KiB
// written out in prose one by one took ~30 s
const POOL = 2_048;
let pool: string[] | undefined;

/** A page's own paragraph of prose seeded by `seed` ('' when `kb` is 0) and the pool draws that follow it. */
function ownParagraph(seed: string, kb: number): { text: string; draws: Uint16Array } {
  if (kb <= 0) return { text: '', draws: new Uint16Array(0) };
  const random = seededRandom([...seed].reduce((h, c) => Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0, 2166136261));
  const draws: number[] = [];
  // 250 pseudo-words are ~1.9 KB
  for (let k = 1; k * 1.9 < kb; k++) draws.push(Math.floor(random() * POOL));
  return { text: `<p>${prose(seed, 250)}</p>`, draws: Uint16Array.from(draws) };
}

/** About `kb` KiB of paragraphs: the page's own, then its draws from the pool. */
function filler(own: { text: string; draws: Uint16Array }, kb: number): string {
  if (kb <= 0) return '';
  pool ??= Array.from({ length: POOL }, (_, k) => `<p>${prose(`pool#${k}`, 250)}</p>`);
  const paragraphs = [own.text];
  for (const d of own.draws) paragraphs.push(pool[d]!);
  return paragraphs.join('\n');
}

/**
 * A CA, a default certificate and certificates for the https hosts in groups of
 * {@link HOSTS_PER_CERTIFICATE}. Made with openssl (~400 runs of it for 2,000 hosts: half a minute
 * on a busy machine) once a day per set of hosts, in a folder of the temp dir named by their hash,
 * and read from there by later runs.
 */
export function benchCertificates(httpsHosts: ReadonlySet<string>): BenchCertificates {
  const hosts = [...httpsHosts];
  const dir = join(
    tmpdir(),
    `crawlstream-bench-certs-${createHash('sha256').update(hosts.join('\n')).digest('hex').slice(0, 16)}`,
  );
  const made = join(dir, 'made.json');
  // the CA is valid 2 days (tls.ts): a day-old set still outlasts any run
  if (existsSync(made) && Date.now() - statSync(made).mtimeMs < 86_400_000)
    return JSON.parse(readFileSync(made, 'utf8')) as BenchCertificates;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const ca = makeTestCertificates(dir, ['default.test']);
  const groups: string[][] = [];
  for (let i = 0; i < hosts.length; i += HOSTS_PER_CERTIFICATE) groups.push(hosts.slice(i, i + HOSTS_PER_CERTIFICATE));
  const certs: BenchCertificates = {
    caFile: ca.caFile,
    caPem: ca.caPem,
    tls: { key: ca.key, cert: ca.cert, hosts: makeHostCertificates(dir, groups) },
  };
  writeFileSync(made, JSON.stringify(certs));
  return certs;
}

export interface BenchCertificates {
  readonly caFile: string;
  readonly caPem: string;
  readonly tls: { key: string; cert: string; hosts: HostCertificate[] };
}
