import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Metrics } from '../../../core/metrics.js';
import { validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { admitLinks } from '../../../processors/frontier/admission.js';
import { DeferredSet } from '../../../processors/frontier/deferred-set.js';
import { releaseDeferred } from '../../../processors/frontier/deferred-release.js';
import { SitePolicy } from '../../../processors/frontier/site-policy.js';
import { SeenSet } from '../../../state/seen-set.js';
import type { LinkBatch, SiteState } from '../../../schemas/types.js';
import { MemoryFingerprintStore } from '../../state/seen-set-memory-store.js';
import { memoryKv } from './memory-kv.js';

/**
 * The template rule and the deferred set at 100,000 pages, where a crawl would take too long: one
 * site at a time, crawled breadth first by the rules with their defaults. A page "fetched" names
 * the links its shape gives it; when the host has nothing queued, the frontier's "ran out" evidence
 * is noted and whatever it releases is queued. The shapes are not the ones the rules were written
 * after (trap-sites.ts): they are the numbered sites and traps of real-web.ts, grown.
 */
interface Shape {
  readonly host: string;
  readonly seeded: boolean;
  /** URLs other sites link to, one link each from a distinct site. */
  readonly linkedFrom: readonly string[];
  /** The links on the page at `url` (absolute, of its own host). */
  links(url: string): string[];
}

/** Crawls `shape` until nothing is queued or released, or `limit` pages; returns the pages fetched. */
function crawl(shape: Shape, limit: number): Set<string> {
  const config = validateCrawlConfig({});
  const seen = new SeenSet(new MemoryFingerprintStore(), { expectedCount: 2_000_000, falsePositiveRate: 0.001 });
  seen.init();
  const metrics = new Metrics();
  const sites = new SitePolicy(memoryKv<SiteState>('frontier-sites'), config);
  const deferred = new DeferredSet(memoryKv<Buffer>('frontier-deferred'));
  const site = shape.host;
  const queue: string[] = [];
  const admit = (from: string | null, urls: string[]) => {
    const batch: LinkBatch = {
      site,
      sourceUrl: from,
      discoveredAt: 1,
      // the hop limit is not what this test is about: every link is one hop from a seed
      links: urls.map((url) => ({ url, depth: 1, redirectHops: 0 })),
    };
    for (const e of admitLinks(batch, 1, config, seen, sites, deferred, metrics).entries) queue.push(e.url);
  };
  const release = () => {
    for (const [s, evidence] of deferred.takePending())
      for (const r of releaseDeferred(s, evidence, deferred, sites, metrics)) queue.push(r.entry.url);
  };
  const home = `https://${site}/`;
  if (shape.seeded) admit(null, [home]);
  shape.linkedFrom.forEach((url, i) => admit(`https://linker${i}.test/`, [url]));
  release();
  const fetched = new Set<string>();
  for (let head = 0; fetched.size < limit;) {
    if (head === queue.length) {
      deferred.mark(site, { exhausted: true });
      release();
      if (head === queue.length) break;
    }
    const url = queue[head++]!;
    fetched.add(url);
    admit(url, shape.links(url));
    release();
  }
  return fetched;
}

const N = 100_000;
const word = (i: number) => {
  const s = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'ze', 'dra', 'fen', 'gul', 'hob', 'jin', 'pax', 'qui'];
  let w = '';
  for (let k = 0; k < 5; k++, i = Math.floor(i / 16)) w += s[i % 16];
  return w;
};
/** Every 100th page, as other sites link a big site: 1,000 distinct pages, one link each. */
const spread = (url: (i: number) => string) => Array.from({ length: 1_000 }, (_, k) => url(1 + k * 100));

test('a seeded site of 100,000 numbered pages behind ?page=N pagination is fetched whole', () => {
  const host = 'big.test';
  const per = 10;
  const pages = N / per;
  const article = (i: number) => `https://${host}/p/${i}`;
  const listing = (n: number) => `https://${host}/archive?page=${n}`;
  const shape: Shape = {
    host,
    seeded: true,
    linkedFrom: [],
    links(url) {
      if (url === `https://${host}/`) return [listing(1)];
      const page = /\?page=(\d+)$/.exec(url);
      if (page !== null) {
        const n = Number(page[1]);
        const pager = [1, n - 2, n - 1, n + 1, n + 2, pages].filter((p) => p >= 1 && p <= pages).map(listing);
        return [...pager, ...Array.from({ length: per }, (_, k) => article((n - 1) * per + k + 1))];
      }
      const i = Number(/\/p\/(\d+)$/.exec(url)![1]);
      return [listing(Math.ceil(i / per)), ...(i > 1 ? [article(i - 1)] : []), ...(i < N ? [article(i + 1)] : [])];
    },
  };
  const fetched = crawl(shape, 2 * N);
  assert.equal(fetched.size, 1 + pages + N);
});

test('a discovered shop of 100,000 /item/N pages linked from 1,000 sites is fetched whole', () => {
  const host = 'shop.test';
  const item = (i: number) => `https://${host}/item/${100_000 + 37 * i}`;
  const shape: Shape = {
    host,
    seeded: false,
    linkedFrom: spread(item),
    links(url) {
      const i = (Number(/\/item\/(\d+)$/.exec(url)![1]) - 100_000) / 37;
      return [i + 1, i + 7, i + 31].map((r) => item(((r - 1) % N) + 1));
    },
  };
  const fetched = crawl(shape, 2 * N);
  assert.equal(fetched.size, N);
});

test('a discovered wiki of 100,000 hand-named pages linked from 1,000 sites is fetched whole', () => {
  const host = 'wiki.test';
  const article = (i: number) => `https://${host}/wiki/${word(i)}`;
  const index = new Map<string, number>();
  for (let i = 1; i <= N; i++) index.set(article(i), i);
  const shape: Shape = {
    host,
    seeded: false,
    linkedFrom: spread(article),
    links(url) {
      const i = index.get(url)!;
      return [i + 1, i + 3, 2 * i].map((r) => article(((r - 1) % N) + 1));
    },
  };
  const fetched = crawl(shape, 2 * N);
  assert.equal(fetched.size, N);
});

/** Traps linked from 1,000 sites, all to the same page, as sites link a calendar or a search. */
const linkedTrap = (host: string, entry: string, links: (url: string) => string[]): Shape => ({
  host,
  seeded: false,
  linkedFrom: Array.from({ length: 1_000 }, () => `https://${host}${entry}`),
  links,
});

const traps: Shape[] = [
  linkedTrap('agenda.test', '/events?day=2026-12-02', (url) => {
    const d = new Date(`${/day=([\d-]+)/.exec(url)![1]}T00:00:00Z`).getTime();
    return [-1, 1].map(
      (k) => `https://agenda.test/events?day=${new Date(d + k * 86_400_000).toISOString().slice(0, 10)}`,
    );
  }),
  linkedTrap('members.test', '/?sid=0', () => {
    const sid = Math.random().toString(16).slice(2, 14).padEnd(12, '7');
    return ['/', '/news', '/help'].map((p) => `https://members.test${p}?sid=${sid}`);
  }),
  linkedTrap('lost.test', '/welcome', (url) => {
    const seed = url.length * 7919 + url.charCodeAt(url.length - 1);
    return [
      `https://lost.test/${word(seed)}-${word(seed + 1)}`,
      `https://lost.test/${word(seed + 2)}/${word(seed + 3)}`,
    ];
  }),
  linkedTrap('threads.test', '/t/98765', (url) => {
    const t = Number(/\/t\/(\d+)$/.exec(url)![1]);
    return [`https://threads.test/t/${t + 1}`, `https://threads.test/t/${t + 2}`];
  }),
  linkedTrap('sorts.test', '/list?sort=price&page=1', (url) => {
    const p = Number(/page=(\d+)/.exec(url)![1]);
    return ['price', 'name', 'date'].map((s) => `https://sorts.test/list?sort=${s}&page=${p + 1}`);
  }),
];

for (const trap of traps)
  test(`a trap linked from 1,000 sites, all to one page, gets at most 100 fetches: ${trap.host}`, () => {
    const fetched = crawl(trap, 10_000);
    assert.ok(fetched.size <= 100, `${trap.host}: ${fetched.size} pages fetched`);
    assert.ok(fetched.size >= 2, `${trap.host} was never entered: the test proves nothing`);
  });
