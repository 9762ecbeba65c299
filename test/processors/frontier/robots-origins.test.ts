import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateCrawlConfig, type CrawlConfig } from '../../../processors/common/crawl-config.js';
import { TOPICS } from '../../../topology/crawl-topology.js';
import type { ControlCommand, FetchRequest, FetchResult } from '../../../schemas/types.js';
import avro from 'avsc';
import { loadSchema } from '../../../schemas/index.js';
import { newHost } from '../../../processors/frontier/host-state.js';
import { applyRobotsOutcome } from '../../../processors/frontier/outcomes.js';
import { RobotsCache } from '../../../processors/frontier/politeness.js';
import { hostStateSerde } from '../../../processors/frontier/robots-origins.js';
import { fetchResultFor } from './fake-fetcher.js';
import { FrontierHarness } from './frontier-harness.js';

/** What a fake host answers: status, Location and body by URL; anything else is a 200 page. */
type Web = Record<string, { status: number; location?: string; body?: string }>;

interface Fetch {
  url: string;
  host: string;
  kind: string;
  at: number;
}

/** Something done to the frontier once `when` holds, after the fetches answered so far. */
interface Step {
  when: (fetches: Fetch[], elapsedMs: number) => boolean;
  run: (h: FrontierHarness) => void;
}

/**
 * Seeds `urls` (one site) into a frontier and plays a fetcher that answers each lease at its
 * notBefore from `web`, each fetch taking 10 ms, until `ms` of clock have passed.
 */
async function crawl(
  urls: string[],
  web: Web,
  ms: number,
  config: Partial<CrawlConfig> = {},
  steps: Step[] = [],
): Promise<{ fetches: Fetch[]; idle: boolean }> {
  const h = await FrontierHarness.open(validateCrawlConfig({ robotsRetryMs: 600_000, ...config }));
  try {
    const site = new URL(urls[0]!).hostname;
    h.feed(TOPICS.links, site, {
      site,
      sourceUrl: null,
      discoveredAt: h.clock,
      links: urls.map((url) => ({ url, depth: 0, redirectHops: 0 })),
    });
    const fetches: Fetch[] = [];
    let answered = 0;
    for (let t = 0; t < ms; t += 100) {
      await h.advance(100);
      // a fetch starts at its notBefore and its result arrives once it is over
      while (answered < h.requests.length && h.requests[answered]!.notBefore + 10 <= h.clock) {
        const r = h.requests[answered++]!;
        fetches.push({ url: r.url, host: r.host, kind: r.kind, at: r.notBefore });
        h.feed(TOPICS.fetchResults, r.site, answer(r, r.notBefore, web[r.url]));
      }
      while (steps.length > 0 && steps[0]!.when(fetches, t)) steps.shift()!.run(h);
    }
    return { fetches, idle: h.task.isIdle() };
  } finally {
    await h.close();
  }
}

function answer(r: FetchRequest, at: number, reply: Web[string] | undefined): FetchResult {
  const status = reply?.status ?? (r.kind === 'ROBOTS' ? 404 : 200);
  return fetchResultFor(r, at, {
    status,
    redirectTarget: reply?.location !== undefined ? new URL(reply.location, r.url).href : null,
    robotsBody: r.kind === 'ROBOTS' && status >= 200 && status < 300 ? (reply?.body ?? '') : null,
  });
}

const urlsOf = (fetches: Fetch[]) => fetches.map((f) => f.url);

function assertOneAtATimeAGapApart(fetches: Fetch[], minGapMs: number): void {
  for (let i = 1; i < fetches.length; i++) {
    const gap = fetches[i]!.at - (fetches[i - 1]!.at + 10);
    assert.ok(gap >= minGapMs, `${fetches[i]!.url} came ${gap} ms after ${fetches[i - 1]!.url}`);
  }
}

test('each origin of a host gets its own robots.txt before its first URL, on the host queue and its gap', async () => {
  const web: Web = {
    'http://shop.test/robots.txt': { status: 200, body: 'User-agent: *\nDisallow: /cart\n' },
    'https://shop.test/robots.txt': { status: 200, body: 'User-agent: *\nDisallow: /account\n' },
  };
  const { fetches } = await crawl(
    [
      'http://shop.test/',
      'https://shop.test/',
      'http://shop.test/account',
      'https://shop.test/account',
      'http://shop.test/cart',
      'https://shop.test/cart',
    ],
    web,
    20_000,
  );
  assert.deepEqual(urlsOf(fetches), [
    'http://shop.test/robots.txt',
    'http://shop.test/',
    'https://shop.test/robots.txt',
    'https://shop.test/',
    // each URL judged by its own origin's rules
    'http://shop.test/account',
    'https://shop.test/cart',
  ]);
  assertOneAtATimeAGapApart(fetches, 1_000);
});

test('a URL on another port is another origin with its own robots.txt', async () => {
  const web: Web = {
    'http://api.test/robots.txt': { status: 404 },
    'http://api.test:8080/robots.txt': { status: 200, body: 'User-agent: *\nDisallow: /\n' },
  };
  const { fetches } = await crawl(['http://api.test/v1', 'http://api.test:8080/v1', 'http://api.test/v2'], web, 10_000);
  assert.deepEqual(urlsOf(fetches), [
    'http://api.test/robots.txt',
    'http://api.test/v1',
    'http://api.test:8080/robots.txt',
    'http://api.test/v2',
  ]);
});

test('robots.txt redirected http → https: the hop is a polite request and its rules apply to the http origin', async () => {
  const web: Web = {
    'http://news.test/robots.txt': { status: 301, location: 'https://news.test/robots.txt' },
    'https://news.test/robots.txt': { status: 200, body: 'User-agent: *\nDisallow: /drafts/\n' },
  };
  const { fetches } = await crawl(
    ['http://news.test/', 'http://news.test/drafts/1', 'https://news.test/drafts/2', 'https://news.test/a'],
    web,
    20_000,
  );
  assert.deepEqual(urlsOf(fetches), [
    'http://news.test/robots.txt',
    'https://news.test/robots.txt',
    'http://news.test/',
    // the chain ended at https's own robots.txt: that origin needs no second request
    'https://news.test/a',
  ]);
  assert.deepEqual(
    fetches.map((f) => f.kind),
    ['ROBOTS', 'ROBOTS', 'PAGE', 'PAGE'],
  );
  assertOneAtATimeAGapApart(fetches, 1_000);
});

/** A robots.txt that redirects `hops` times on its own host (relative Locations), then serves rules. */
function chain(origin: string, hops: number, rules: string): Web {
  const web: Web = {};
  const path = (i: number) => (i === 0 ? '/robots.txt' : `/moved/${i}.txt`);
  for (let i = 0; i < hops; i++) web[`${origin}${path(i)}`] = { status: 302, location: path(i + 1) };
  web[`${origin}${path(hops)}`] = { status: 200, body: rules };
  return web;
}

test('five redirects of robots.txt are followed and the rules at their end apply', async () => {
  const web = chain('https://five.test', 5, 'User-agent: *\nDisallow: /no\n');
  const { fetches } = await crawl(['https://five.test/yes', 'https://five.test/no'], web, 20_000);
  assert.deepEqual(urlsOf(fetches), [
    'https://five.test/robots.txt',
    ...[1, 2, 3, 4, 5].map((i) => `https://five.test/moved/${i}.txt`),
    'https://five.test/yes',
  ]);
  assertOneAtATimeAGapApart(fetches, 1_000);
});

test('a sixth redirect of robots.txt makes it unavailable: nothing else of the origin is fetched', async () => {
  const web = chain('https://six.test', 6, 'User-agent: *\nAllow: /\n');
  const { fetches, idle } = await crawl(['https://six.test/a', 'https://six.test/b'], web, 30_000);
  assert.deepEqual(urlsOf(fetches), [
    'https://six.test/robots.txt',
    ...[1, 2, 3, 4, 5].map((i) => `https://six.test/moved/${i}.txt`),
  ]);
  assert.equal(idle, true, 'the origin is parked until its retry, so the crawl is idle');
});

test('a robots.txt redirect loop is unavailable without waiting for the hop limit', async () => {
  const web: Web = {
    'http://loop.test/robots.txt': { status: 301, location: '/a.txt' },
    'http://loop.test/a.txt': { status: 301, location: '/robots.txt' },
  };
  const { fetches } = await crawl(['http://loop.test/page'], web, 20_000);
  assert.deepEqual(urlsOf(fetches), ['http://loop.test/robots.txt', 'http://loop.test/a.txt']);
});

test('a robots.txt redirect to another site is unavailable (its host may be in another partition)', async () => {
  const web: Web = { 'http://old.test/robots.txt': { status: 301, location: 'http://new.test/robots.txt' } };
  const { fetches } = await crawl(['http://old.test/page'], web, 10_000);
  assert.deepEqual(urlsOf(fetches), ['http://old.test/robots.txt']);
});

test("a robots.txt redirect to another host of the site is that host's request, and its rules apply to the asking origin", async () => {
  const web: Web = {
    'http://example.test/robots.txt': { status: 301, location: 'https://www.example.test/robots.txt' },
    'https://www.example.test/robots.txt': { status: 200, body: 'User-agent: *\nDisallow: /private/\n' },
  };
  const { fetches } = await crawl(
    ['http://example.test/', 'http://example.test/private/1', 'http://example.test/2'],
    web,
    20_000,
  );
  assert.deepEqual(
    fetches.map((f) => [f.host, f.url]),
    [
      ['example.test', 'http://example.test/robots.txt'],
      ['www.example.test', 'https://www.example.test/robots.txt'],
      ['example.test', 'http://example.test/'],
      ['example.test', 'http://example.test/2'],
    ],
  );
  assertOneAtATimeAGapApart(
    fetches.filter((f) => f.host === 'example.test'),
    1_000,
  );
});

test('a host fetching a hop for another host keeps its own gap between that and its own requests', async () => {
  const web: Web = {
    'http://example.test/robots.txt': { status: 302, location: 'https://www.example.test/moved/robots.txt' },
    'https://www.example.test/moved/robots.txt': { status: 200, body: 'User-agent: *\nDisallow: /x\n' },
    'https://www.example.test/robots.txt': { status: 200, body: 'User-agent: *\nDisallow: /y\n' },
  };
  const { fetches } = await crawl(
    [
      'http://example.test/x',
      'https://www.example.test/x',
      'https://www.example.test/y',
      'http://example.test/y',
      'https://www.example.test/z',
    ],
    web,
    30_000,
  );
  const www = fetches.filter((f) => f.host === 'www.example.test');
  assertOneAtATimeAGapApart(www, 1_000);
  assert.deepEqual(
    new Set(www.map((f) => f.url)),
    new Set([
      'https://www.example.test/robots.txt',
      'https://www.example.test/moved/robots.txt',
      'https://www.example.test/x',
      'https://www.example.test/z',
    ]),
  );
  // each origin judged by its own rules: the apex's came from the moved file, www's from its own
  assert.deepEqual(
    fetches.filter((f) => f.host === 'example.test').map((f) => f.url),
    ['http://example.test/robots.txt', 'http://example.test/y'],
  );
});

test('an unavailable robots.txt is asked again after the retry wait, and then its rules apply', async () => {
  let answers = 0;
  const web: Web = {};
  Object.defineProperty(web, 'http://flaky.test/robots.txt', {
    enumerable: true,
    get: () => (answers++ === 0 ? { status: 503 } : { status: 200, body: 'User-agent: *\nDisallow: /x\n' }),
  });
  const { fetches } = await crawl(['http://flaky.test/x', 'http://flaky.test/y'], web, 20_000, {
    robotsRetryMs: 5_000,
    backoffJitterPercent: 0,
  });
  assert.deepEqual(urlsOf(fetches), [
    'http://flaky.test/robots.txt',
    'http://flaky.test/robots.txt',
    'http://flaky.test/y',
  ]);
  assert.ok(fetches[1]!.at - fetches[0]!.at >= 5_000, 'retried before the retry wait');
});

test('a host state written before per-origin robots is read with its rules moved to its origin', () => {
  const current = JSON.parse(loadSchema('HostState').text) as { fields: { name: string }[] };
  const legacy = avro.Type.forSchema({
    ...current,
    fields: current.fields.slice(0, current.fields.findIndex((f) => f.name === 'parkedUntil') + 1),
  } as avro.Schema);
  const old = {
    ...newHost('old.test', 'https://old.test', 'old.test'),
    robotsState: 'READY',
    robotsBody: 'User-agent: *\nDisallow: /x\n',
    robotsFetchedAt: 123,
    robotsFailures: 0,
    crawlDelayMs: 2_000,
  };
  const serde = hostStateSerde();
  const read = serde.deserialize(legacy.toBuffer(old));
  assert.deepEqual(JSON.parse(JSON.stringify(read.robots)), [
    {
      origin: 'https://old.test',
      state: 'READY',
      body: 'User-agent: *\nDisallow: /x\n',
      fetchedAt: 123,
      failures: 0,
      crawlDelayMs: 2_000,
      sitemaps: [],
    },
  ]);
  assert.equal(read.robotsState, 'UNKNOWN', 'the old fields are written as their defaults from now on');
  assert.equal(read.crawlDelayMs, 2_000, 'the host keeps its Crawl-delay');
  assert.deepEqual(JSON.stringify(serde.deserialize(serde.serialize(read))), JSON.stringify(read));
});

test('a host state written before leaseVisit (with per-origin robots and a lease out) is read whole, leaseVisit 0', () => {
  const current = JSON.parse(loadSchema('HostState').text) as { fields: { name: string }[] };
  const previous = avro.Type.forSchema({
    ...current,
    fields: current.fields.filter((f) => f.name !== 'leaseVisit'),
  } as avro.Schema);
  const old = {
    ...newHost('prev.test', 'https://prev.test', 'prev.test'),
    lease: {
      leaseId: '3-0-a',
      url: 'https://prev.test/a',
      kind: 'PAGE',
      depth: 1,
      redirectHops: 0,
      attempts: 2,
      issuedAt: 5,
      expiresAt: 9,
      fromQueue: true,
    },
    robots: [
      {
        origin: 'https://prev.test',
        state: 'READY',
        body: '',
        fetchedAt: 1,
        failures: 0,
        crawlDelayMs: 0,
        sitemaps: ['https://prev.test/s.xml'],
      },
    ],
  };
  const read = hostStateSerde().deserialize(previous.toBuffer(old));
  assert.equal(read.lease?.attempts, 2);
  assert.deepEqual(read.robots[0]?.sitemaps, ['https://prev.test/s.xml']);
  assert.equal(read.leaseVisit, 0);
});

test('Sitemap lines are kept per origin, at most 50, none longer than 2,000 characters', () => {
  const config = validateCrawlConfig({});
  const robots = new RobotsCache(config.userAgent);
  const state = newHost('maps.test', 'https://maps.test', 'maps.test');
  const lines = Array.from({ length: 60 }, (_, i) => `Sitemap: https://maps.test/sitemap-${i}.xml`);
  lines.splice(3, 0, `Sitemap: https://maps.test/${'x'.repeat(2_000)}.xml`);
  const request = { leaseId: 'l', ownerEpoch: 1, site: 'maps.test', host: 'maps.test', kind: 'ROBOTS' } as FetchRequest;
  const result = answer({ ...request, url: 'https://maps.test/robots.txt' }, 0, {
    status: 200,
    body: `User-agent: *\nDisallow:\n${lines.join('\n')}\n`,
  });
  applyRobotsOutcome(state, result, 1, config, robots);
  const http = answer({ ...request, url: 'http://maps.test/robots.txt' }, 0, {
    status: 200,
    body: 'Sitemap: http://maps.test/only.xml\n',
  });
  applyRobotsOutcome(state, http, 2, config, robots);
  const https = state.robots.find((r) => r.origin === 'https://maps.test')!;
  assert.equal(https.sitemaps.length, 50);
  assert.deepEqual(
    https.sitemaps.slice(0, 4),
    [0, 1, 2, 3].map((i) => `https://maps.test/sitemap-${i}.xml`),
  );
  assert.deepEqual(state.robots.find((r) => r.origin === 'http://maps.test')!.sitemaps, ['http://maps.test/only.xml']);
});

test("an origin's robots.txt is fetched again once older than robotsTtlMs, before that origin's next URL", async () => {
  const web: Web = { 'http://fresh.test/robots.txt': { status: 200, body: 'User-agent: *\nDisallow: /z\n' } };
  const urls = Array.from({ length: 6 }, (_, i) => `http://fresh.test/p${i}`);
  const { fetches } = await crawl(urls, web, 20_000, { robotsTtlMs: 3_500 });
  const robots = fetches.filter((f) => f.kind === 'ROBOTS');
  assert.equal(robots.length, 2, urlsOf(fetches).join(' '));
  assert.ok(robots[1]!.at - robots[0]!.at > 3_500, 'fetched again before its time to live ran out');
  assert.equal(fetches.filter((f) => f.kind === 'PAGE').length, 6);
});

test('robots.txt bodies stay out of the host state: three 400 KiB bodies leave it small, and each origin keeps its own rules', () => {
  const config = validateCrawlConfig({});
  const stored = new Map<string, string>();
  const writes: string[] = [];
  const robots = new RobotsCache(config.userAgent);
  robots.attach({ get: (o) => stored.get(o), put: (o, b) => (writes.push(o), stored.set(o, b)) });
  const state = newHost('big.test', 'http://big.test', 'big.test');
  const request = { leaseId: 'l', ownerEpoch: 1, site: 'big.test', host: 'big.test', kind: 'ROBOTS' } as FetchRequest;
  const origins = ['http://big.test', 'https://big.test', 'http://big.test:8080'];
  for (const [i, origin] of origins.entries())
    applyRobotsOutcome(
      state,
      answer({ ...request, url: `${origin}/robots.txt` }, i, {
        status: 200,
        body: `User-agent: *\nDisallow: /only-${i}\n#${'-'.repeat(400 * 1024)}\n`,
      }),
      i,
      config,
      robots,
    );
  assert.deepEqual(
    state.robots.map((r) => [r.origin, r.state, r.body]),
    origins.map((o) => [o, 'READY', null]),
  );
  const size = hostStateSerde().serialize(state).length;
  assert.ok(size < 4_096, `the host state is ${size} bytes`);
  assert.deepEqual(writes, origins, 'each body is stored once, under its origin');
  // a fresh cache (a new processor after a restart) reads the bodies back from the store
  const fresh = new RobotsCache(config.userAgent);
  fresh.attach({ get: (o) => stored.get(o), put: () => assert.fail('nothing to write') });
  for (const [i, origin] of origins.entries()) {
    assert.equal(fresh.allows(origin, `${origin}/only-${i}`), false, `${origin} keeps its own Disallow`);
    assert.equal(fresh.allows(origin, `${origin}/only-${(i + 1) % 3}`), true, `${origin} has no other's Disallow`);
  }
  assert.equal(
    fresh.allows('http://other.test', 'http://other.test/'),
    undefined,
    'an unknown body is not "allow all"',
  );
});

const control = (action: ControlCommand['action']) => (h: FrontierHarness) =>
  h.feed(TOPICS.control, 'example.test', {
    site: 'example.test',
    action,
    minGapMs: null,
    issuedAt: h.clock,
    issuedBy: null,
  });

test('a host whose robots.txt waits on another host of its site is paused and blocked with its site', async () => {
  const web: Web = {
    'http://example.test/robots.txt': { status: 301, location: 'https://www.example.test/robots.txt' },
    'https://www.example.test/robots.txt': { status: 200, body: 'User-agent: *\nAllow: /\n' },
    // www is not due for a while when the hop reaches it: the apex waits out of the schedule
    'http://www.example.test/robots.txt': { status: 200, body: 'User-agent: *\nCrawl-delay: 20\n' },
  };
  const urls = ['http://example.test/a', 'http://www.example.test/own', 'http://example.test/b'];
  const idleWhilePaused: boolean[] = [];
  let resumedAt = Infinity;
  const paused = await crawl(urls, web, 120_000, {}, [
    { when: (_, t) => t >= 5_000, run: control('PAUSE') },
    { when: (_, t) => t >= 40_000, run: (h) => idleWhilePaused.push(h.task.isIdle()) },
    {
      when: (_, t) => t >= 40_000,
      run: (h) => {
        resumedAt = h.clock;
        control('RESUME')(h);
      },
    },
  ]);
  assert.deepEqual(idleWhilePaused, [true], 'a host waiting on another was not held with its paused site');
  const hop = paused.fetches.find((f) => f.url === 'https://www.example.test/robots.txt');
  assert.ok(hop && hop.at >= resumedAt, 'the hop was fetched while its site was paused');
  assert.deepEqual(
    paused.fetches
      .filter((f) => f.kind === 'PAGE')
      .map((f) => f.url)
      .sort(),
    ['http://example.test/a', 'http://example.test/b', 'http://www.example.test/own'],
  );

  const blocked = await crawl(urls, web, 60_000, {}, [{ when: (_, t) => t >= 5_000, run: control('BLOCK') }]);
  assert.deepEqual(
    blocked.fetches.filter((f) => f.kind === 'PAGE'),
    [],
  );
  assert.equal(blocked.idle, true, 'a blocked site keeps --until-idle from ending');
});
