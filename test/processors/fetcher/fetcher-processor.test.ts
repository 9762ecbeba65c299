import assert from 'node:assert/strict';
import type http from 'node:http';
import { after, describe, test } from 'node:test';
import { DEFAULT_USER_AGENT, productToken, validateCrawlConfig } from '../../../processors/common/crawl-config.js';
import { RobotsCache } from '../../../processors/frontier/politeness.js';
import type { FetcherProcessor } from '../../../processors/fetcher/fetcher-processor.js';
import type { FetchedPage, FetchResult } from '../../../schemas/types.js';
import { startHttp, type LoopbackServer } from './loopback.js';
import { createLogger } from '../../../core/logger.js';
import { leaseIdOf } from '../../../processors/common/lease-id.js';
import {
  byType,
  failedFetchRecords,
  FETCHER,
  fetcherDriver,
  lease,
  loopbackConfig,
  runLeases,
  TOPIC,
} from './pipeline.js';

const servers: LoopbackServer[] = [];
const track = <T extends LoopbackServer>(s: T): T => (servers.push(s), s);
after(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

const ETAG = '"v1"';
const LAST_MODIFIED = 'Wed, 21 Oct 2026 07:28:00 GMT';

describe('FetcherProcessor', () => {
  test("sends the lease's If-None-Match and If-Modified-Since; a 304 is a result, a WARC response and a page record, not an error", async () => {
    const seen: http.IncomingHttpHeaders[] = [];
    const server = track(
      await startHttp((req, res) => {
        seen.push(req.headers);
        if (req.headers['if-none-match'] === ETAG) {
          res.writeHead(304, { etag: ETAG, 'last-modified': LAST_MODIFIED });
          return void res.end();
        }
        res.writeHead(200, { 'content-type': 'text/html', etag: ETAG, 'last-modified': LAST_MODIFIED });
        res.end('<a href="/other">other</a>');
      }),
    );
    const url = `http://cond.test:${server.port}/page`;
    const plainUrl = `http://plain.test:${server.port}/page`;
    const run = await runLeases(loopbackConfig(), [
      lease(url, { ifNoneMatch: ETAG, ifModifiedSince: LAST_MODIFIED }),
      lease(plainUrl),
    ]);

    const conditional = seen.find((h) => h.host?.startsWith('cond.test'))!;
    assert.equal(conditional['if-none-match'], ETAG);
    assert.equal(conditional['if-modified-since'], LAST_MODIFIED);
    const plain = seen.find((h) => h.host?.startsWith('plain.test'))!;
    assert.equal(plain['if-none-match'], undefined, 'a lease without validators sends none');

    const result = run.results.find((r) => r.url === url)!;
    assert.deepEqual(
      { status: result.status, errorCode: result.errorCode, redirectTarget: result.redirectTarget },
      { status: 304, errorCode: null, redirectTarget: null },
    );
    const record = run.pageRecords.find((p) => p.url === url)!;
    assert.deepEqual(
      { status: record.status, errorCode: record.errorCode, outlinks: record.outlinkCount },
      { status: 304, errorCode: null, outlinks: 0 },
    );
    assert.ok(record.warcFile !== null && record.warcOffset !== null, 'the 304 points at its WARC record');
    assert.deepEqual(
      byType(run.warc, 'response')
        .filter((r) => r['warc-target-uri'] === url)
        .map((r) => r['http:status']),
      ['304'],
    );
    const archivedHead = run.warcRequests.find((h) => h.includes('host: cond.test'))!;
    assert.match(archivedHead, /^GET \/page HTTP\/1\.1\r\n/);
    assert.match(archivedHead, /\r\nif-none-match: "v1"\r\n/, 'the archived request shows the validator sent');
    assert.match(archivedHead, /\r\nif-modified-since: Wed, 21 Oct 2026 07:28:00 GMT\r\n/);
    assert.equal(run.pageRecords.find((p) => p.url === plainUrl)?.status, 200);
  });

  test('a lease record written twice (a producer retry) is one request and one answer', async () => {
    const paths: string[] = [];
    const server = track(
      await startHttp((req, res) => {
        paths.push(req.url ?? '');
        res.end('ok');
      }),
    );
    const once = lease(`http://twice.test:${server.port}/page`);
    const other = lease(`http://twice.test:${server.port}/other`);
    const run = await runLeases(loopbackConfig(), [once, { ...once }, other]);
    assert.deepEqual(paths.sort(), ['/other', '/page']);
    assert.deepEqual(run.results.map((r) => r.leaseId).sort(), [once.leaseId, other.leaseId].sort());
  });

  test('sends the configured User-Agent, and robots.txt groups are matched against its product token', async () => {
    const agents: string[] = [];
    const server = track(
      await startHttp((req, res) => {
        agents.push(req.headers['user-agent'] ?? '');
        res.end('ok');
      }),
    );
    const userAgent = 'acmebot/2.0 (+https://acme.test/bot)';
    await runLeases(loopbackConfig({ userAgent }), [lease(`http://ua.test:${server.port}/`)]);
    assert.deepEqual(agents, [userAgent]);

    const origin = 'http://site.test';
    const robots = 'User-agent: acmebot\nDisallow: /private/\nCrawl-delay: 3\n\nUser-agent: *\nDisallow: /\n';
    const acme = new RobotsCache(userAgent);
    assert.equal(productToken(userAgent), 'acmebot');
    assert.equal(acme.isAllowed(origin, robots, `${origin}/public.html`), true, 'the acmebot group applies, not *');
    assert.equal(acme.isAllowed(origin, robots, `${origin}/private/x.html`), false);
    assert.equal(acme.crawlDelayMs(origin, robots), 3_000);
    const other = new RobotsCache('otherbot/1.0 (+https://other.test/)');
    assert.equal(other.isAllowed(origin, robots, `${origin}/public.html`), false, 'another token falls to the * group');

    assert.equal(productToken(DEFAULT_USER_AGENT), 'crawlstream');
    assert.match(
      DEFAULT_USER_AGENT,
      /^crawlstream\/\S+ \(\+https?:\/\/\S+\)$/,
      'the default names a product token and a contact URL',
    );
    const ours = 'User-agent: crawlstream\nDisallow: /\n\nUser-agent: *\nDisallow:\n';
    assert.equal(new RobotsCache(DEFAULT_USER_AGENT).isAllowed(origin, ours, `${origin}/a.html`), false);
    assert.throws(() => validateCrawlConfig({ userAgent: '(+https://acme.test/bot)' }), { code: 'CS_INVALID_OPTION' });
  });

  test('a robots.txt lease returns its body in the result and is archived, but publishes no page record', async () => {
    const body = 'User-agent: *\nDisallow: /private/\n';
    const server = track(
      await startHttp((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(body);
      }),
    );
    const url = `http://robots.test:${server.port}/robots.txt`;
    const run = await runLeases(loopbackConfig(), [lease(url, { kind: 'ROBOTS' })]);
    assert.equal(run.results.length, 1);
    assert.deepEqual(
      { kind: run.results[0]!.kind, status: run.results[0]!.status, robotsBody: run.results[0]!.robotsBody },
      { kind: 'ROBOTS', status: 200, robotsBody: body },
    );
    assert.deepEqual(
      byType(run.warc, 'response').map((r) => r['warc-target-uri']),
      [url],
    );
    assert.deepEqual(run.pageRecords, []);
    assert.deepEqual(run.links, []);
  });

  test('a late lease is answered CS_LEASE_EXPIRED without a connection, archived as metadata, and publishes nothing', async () => {
    const server = track(await startHttp((_req, res) => res.end('too late')));
    const url = `http://late.test:${server.port}/`;
    const run = await runLeases(loopbackConfig(), [lease(url, { notAfter: Date.now() - 1, attempt: 5 })]);
    assert.equal(server.connections(), 0);
    assert.deepEqual(
      run.results.map((r) => [r.status, r.errorCode]),
      [[0, 'CS_LEASE_EXPIRED']],
    );
    assert.deepEqual(
      failedFetchRecords(run.warc).map((r) => r['warc-target-uri']),
      [url],
    );
    assert.deepEqual(run.pageRecords, [], 'even on its last attempt, an expired lease says nothing about the page');
  });

  test("a lease the per-IP gate holds past its start window is answered CS_LEASE_EXPIRED, never sent: its slot may be another partition's by then", async () => {
    const hosts: string[] = [];
    const server = track(
      await startHttp((req, res) => {
        hosts.push((req.headers.host ?? '').split(':')[0]!);
        res.end('ok');
      }),
    );
    // two hosts on one address (127.0.0.1): the second may start only 600 ms after the first, and its window ends before that
    const first = lease(`http://first.test:${server.port}/`);
    const second = lease(`http://second.test:${server.port}/`, { notAfter: Date.now() + 200 });
    const run = await runLeases(loopbackConfig({ ipGapMs: 600 }), [first, second]);
    assert.deepEqual(hosts, ['first.test']);
    const byLease = new Map(run.results.map((r) => [r.leaseId, r]));
    assert.equal(byLease.get(first.leaseId)?.status, 200);
    assert.equal(byLease.get(second.leaseId)?.errorCode, 'CS_LEASE_EXPIRED');
    assert.match(byLease.get(second.leaseId)?.errorMessage ?? '', /after its not-after deadline/);
  });

  test('a lease is not started before its notBefore', async () => {
    const arrivals: number[] = [];
    const server = track(
      await startHttp((_req, res) => {
        arrivals.push(Date.now());
        res.end('ok');
      }),
    );
    const notBefore = Date.now() + 700;
    const run = await runLeases(loopbackConfig(), [lease(`http://early.test:${server.port}/`, { notBefore })]);
    assert.equal(arrivals.length, 1);
    assert.ok(arrivals[0]! >= notBefore, `fetched ${notBefore - arrivals[0]!} ms early`);
    assert.equal(run.results[0]?.status, 200);
  });
});

test('a lease of an older frontier owner epoch is dropped unfetched once a newer epoch has been seen (the partition moved)', async () => {
  const hits: string[] = [];
  const server = await startHttp((req, res) => {
    hits.push(req.headers.host ?? '');
    res.end('ok');
  });
  try {
    // the newer epoch comes first: the stale lease is judged against it whatever the timing (no
    // race between a wait on the stale lease's notBefore and the arrival of the newer lease)
    const fresh = lease(`http://fresh.test:${server.port}/`, { ownerEpoch: 2 });
    const stale = lease(`http://stale.test:${server.port}/`, { ownerEpoch: 1 });
    const run = await runLeases(loopbackConfig(), [fresh, stale]);
    assert.deepEqual(
      hits.map((h) => h.split(':')[0]),
      ['fresh.test'],
    );
    const byLease = new Map(run.results.map((r) => [r.leaseId, r]));
    assert.equal(byLease.get(stale.leaseId)?.errorCode, 'CS_LEASE_EXPIRED');
    assert.match(byLease.get(stale.leaseId)?.errorMessage ?? '', /owner epoch 1; epoch 2 owns/);
    assert.equal(byLease.get(fresh.leaseId)?.status, 200);
  } finally {
    await server.close();
  }
});

test(
  'a lease still waiting for its notBefore when the fetcher closes gives up at once: no request, no result',
  { timeout: 20_000 },
  async () => {
    // a task closed by a rebalance or a stop has made its last commit: a fetch after it could never
    // be committed, and its timer would hold the process up to the host's gap. Without the abort the
    // waiting process() below resolves only after notBefore (60 s), past this test's timeout.
    const hits: string[] = [];
    const server = await startHttp((req, res) => {
      hits.push(req.url ?? '');
      res.end('ok');
    });
    try {
      const driver = await fetcherDriver(loopbackConfig());
      const waiting = lease(`http://later.test:${server.port}/page`, {
        notBefore: Date.now() + 60_000,
        notAfter: Date.now() + 120_000,
      });
      const due = lease(`http://now.test:${server.port}/page`);
      const processing = driver.pipeInput(TOPIC.requests, waiting.site, waiting);
      await driver.pipeInput(TOPIC.requests, due.site, due);
      assert.equal(hits.length, 1, 'the due lease is fetched');
      await driver.close();
      await processing;
      assert.deepEqual(hits, ['/page'], 'the waiting lease sent a request');
      const forwarded = [...driver.output<FetchResult>(TOPIC.results), ...driver.output<FetchedPage>(TOPIC.fetched)];
      assert.equal(forwarded.length, 2, 'the due lease was answered with its result and its page');
      assert.equal(
        forwarded.filter((r) => r.value!.leaseId === waiting.leaseId).length,
        0,
        'the waiting lease was answered',
      );
    } finally {
      await server.close();
    }
  },
);

test(
  'many leases of one fetcher task waiting for their notBefore at once leave no listener-leak warning, and every wait is gone when it ends',
  { timeout: 30_000 },
  async () => {
    // a host's next slot is often seconds away, so a task's leases wait together: on a 4,000-host
    // crawl and in a continuous crawl, an abortable sleep per lease on one shared closing signal
    // put more than ten 'abort' listeners on it (MaxListenersExceededWarning)
    const warnings: Error[] = [];
    const onWarning = (w: Error) => void warnings.push(w);
    process.on('warning', onWarning);
    const hits: string[] = [];
    const server = await startHttp((req, res) => {
      hits.push(`${req.headers.host?.split(':')[0]}${req.url}`);
      res.end('ok');
    });
    try {
      const driver = await fetcherDriver(loopbackConfig());
      const fetcher = driver.processor<FetcherProcessor>(FETCHER);
      const soon = Array.from({ length: 40 }, (_, i) =>
        lease(`http://w${i}.test:${server.port}/page`, { notBefore: Date.now() + 300, notAfter: Date.now() + 60_000 }),
      );
      const running = soon.map((l) => driver.pipeInput(TOPIC.requests, l.site, l));
      assert.equal(fetcher.waitingLeases, 40);
      await Promise.all(running);
      assert.equal(hits.length, 40, 'every lease was fetched once its time came');
      assert.equal(fetcher.waitingLeases, 0, 'a wait that ended is forgotten');

      const later = Array.from({ length: 40 }, (_, i) =>
        lease(`http://l${i}.test:${server.port}/page`, {
          notBefore: Date.now() + 60_000,
          notAfter: Date.now() + 120_000,
        }),
      );
      const waiting = later.map((l) => driver.pipeInput(TOPIC.requests, l.site, l));
      assert.equal(fetcher.waitingLeases, 40);
      await driver.close();
      await Promise.all(waiting);
      assert.equal(fetcher.waitingLeases, 0, 'close ended every wait');
      assert.equal(hits.length, 40, 'no lease still waiting at the close was fetched');
      // a warning is emitted on the next tick
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(
        warnings.map((w) => `${w.name}: ${w.message}`),
        [],
      );
    } finally {
      process.off('warning', onWarning);
      await server.close();
    }
  },
);

test('at --log-level debug the fetcher logs when each request left, on its own clock, before the server had it', async () => {
  const arrived: number[] = [];
  const server = await startHttp((_req, res) => {
    arrived.push(performance.timeOrigin + performance.now());
    res.end('ok');
  });
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: 'debug', format: 'json', write: (l) => lines.push(JSON.parse(l)) });
  const fetcher = await fetcherDriver(loopbackConfig(), undefined, { partition: 0, partitions: 1, logger });
  try {
    const before = performance.timeOrigin + performance.now();
    const one = lease(`http://sent.test:${server.port}/a`);
    await fetcher.pipeInputs(TOPIC.requests, [{ key: one.site, value: one }]);
    const sent = lines.filter((l) => l['msg'] === 'request sent');
    assert.equal(sent.length, 1, JSON.stringify(lines));
    assert.equal(sent[0]!['url'], one.url);
    assert.equal(sent[0]!['lease'], one.leaseId);
    assert.equal(sent[0]!['address'], '127.0.0.1');
    const at = sent[0]!['sentAt'] as number;
    assert.ok(at >= before - 0.1 && at <= arrived[0]! + 0.1, `sent at ${at}: after ${before}, by ${arrived[0]}`);
  } finally {
    await fetcher.close();
    await server.close();
  }
});

test("a task takes leases of several frontier partitions, each judged stale only against its own partition's newest epoch", async () => {
  const hits: string[] = [];
  const server = await startHttp((req, res) => {
    hits.push((req.headers.host ?? '').split(':')[0]!);
    res.end('ok');
  });
  try {
    // partition 0 is at epoch 5, partition 1 at epoch 2 (it moved less often): both are current;
    // a lease of partition 0's epoch 4 is an older owner's
    const p0 = lease(`http://zero.test:${server.port}/`, { ownerEpoch: 5, leaseId: leaseIdOf(5, 0, 1) });
    const p1 = lease(`http://one.test:${server.port}/`, { ownerEpoch: 2, leaseId: leaseIdOf(2, 1, 1) });
    const old = lease(`http://old.test:${server.port}/`, { ownerEpoch: 4, leaseId: leaseIdOf(4, 0, 9) });
    const run = await runLeases(loopbackConfig(), [p0, p1, old]);
    assert.deepEqual(hits.sort(), ['one.test', 'zero.test']);
    const byLease = new Map(run.results.map((r) => [r.leaseId, r]));
    assert.equal(byLease.get(p1.leaseId)?.status, 200, 'the partition at a lower epoch is not stale');
    assert.equal(byLease.get(old.leaseId)?.errorCode, 'CS_LEASE_EXPIRED');
    assert.match(byLease.get(old.leaseId)?.errorMessage ?? '', /owner epoch 4; epoch 5 owns/);
  } finally {
    await server.close();
  }
});

test('leases waiting for their start hold no fetch permit: a lease due now is fetched before them, whatever --fetch-concurrency', async () => {
  const hits: string[] = [];
  const server = await startHttp((req, res) => {
    hits.push(req.headers.host!.split(':')[0]!);
    res.end('ok');
  });
  try {
    // twice the permits wait 1.5 s for their start (Kafka's slots plan leases that far ahead),
    // then one lease is due at once: it must not queue behind them
    const start = Date.now() + 1_500;
    const waiting = [0, 1, 2, 3].map((i) => lease(`http://later${i}.test:${server.port}/`, { notBefore: start }));
    const now = lease(`http://now.test:${server.port}/`);
    const run = await runLeases(loopbackConfig({ fetchConcurrency: 2 }), [...waiting, now]);
    assert.equal(hits[0], 'now.test', `order at the server: ${hits.join(', ')}`);
    assert.deepEqual(hits.slice(1).sort(), ['later0.test', 'later1.test', 'later2.test', 'later3.test']);
    assert.deepEqual(
      run.results.map((r) => r.status),
      [200, 200, 200, 200, 200],
    );
  } finally {
    await server.close();
  }
});
