import assert from 'node:assert/strict';
import type { SiteSpec } from '../../synthetic-web/sites.js';
import type { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import type { RequestLogEntry } from '../../synthetic-web/request-log.js';
import type { SiteStatus } from '../../processors/frontier/site-status.js';
import { CLI, sh, sleep } from './harness.js';

/** Crawl-delay of queued.test: its URLs wait this long after robots.txt (the frontier's cap is 60 s). */
export const CRAWL_DELAY_S = 60;
/** Retry-After of every page answer of throttled.test. */
export const RETRY_AFTER_S = 120;

/**
 * Three sites an operator would ask about: queued.test queues its seeds behind a long
 * Crawl-delay, throttled.test answers every page 429 with a long Retry-After (backed off), and
 * norobots.test's robots.txt answers 503 (parked until a robots.txt retry).
 */
export function statusSites(): SiteSpec[] {
  const pages = (host: string, paths: string[]) =>
    Object.fromEntries(paths.map((p) => [p, { title: `${host} ${p}`, links: paths }]));
  return [
    {
      host: 'queued.test',
      seed: true,
      robots: { status: 200, body: `User-agent: *\nCrawl-delay: ${CRAWL_DELAY_S}\nDisallow:\n` },
      pages: pages('queued.test', ['/', '/p1.html', '/p2.html', '/p3.html']),
    },
    {
      host: 'throttled.test',
      seed: true,
      robots: { status: 200, body: 'User-agent: *\nDisallow:\n' },
      pages: pages('throttled.test', ['/', '/t1.html']),
      throttle: { requests: 1_000, status: 429, retryAfterSec: RETRY_AFTER_S },
    },
    {
      host: 'norobots.test',
      seed: true,
      robots: { status: 503, body: 'Service Unavailable\n' },
      pages: pages('norobots.test', ['/', '/n1.html']),
    },
  ];
}

/** Seeds: every page of each site, so that each has URLs queued before its first fetch. */
export function statusSeeds(web: SyntheticWeb): string[] {
  return web.sites.flatMap((s) => Object.keys(s.pages).map((p) => web.url(s.host, p)));
}

/** One host row of `crawlstream status SITE`'s table. */
export interface HostRow {
  readonly host: string;
  readonly phase: string;
  readonly queued: number;
  readonly line: string;
}

/** The host rows of the table `crawlstream status SITE` printed (the lines after its HOST header). */
export function hostRows(stdout: string): HostRow[] {
  const lines = stdout.split('\n');
  const header = lines.findIndex((l) => l.startsWith('HOST '));
  if (header < 0) return [];
  const rows: HostRow[] = [];
  for (const line of lines.slice(header + 1)) {
    const m = /^(\S+)\s+(\S+)\s+(\d+)\s/.exec(line);
    if (!m) break;
    rows.push({ host: m[1]!, phase: m[2]!, queued: Number(m[3]), line });
  }
  return rows;
}

export interface StatusRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI: `crawlstream status [SITE] --ops ADDRESS [extra]`. */
export function statusCli(ops: string, site?: string, extra: string[] = []): Promise<StatusRun> {
  return sh(process.execPath, [CLI, 'status', ...(site ? [site] : []), '--ops', ops, ...extra]);
}

/** What each site of `statusSites()` must show once its first requests are answered. */
export const EXPECTED_PHASE: Readonly<Record<string, string>> = {
  'queued.test': 'waiting',
  'throttled.test': 'backed-off',
  'norobots.test': 'parked',
};

/**
 * Asks `crawlstream status SITE` of `ops()` (the endpoint of the instance owning each site) until
 * every site shows its expected phase, or fails after `withinMs`; returns each site's table and
 * JSON. `alive` says whether the crawl still runs (a dead one fails at once).
 */
export async function awaitPhases(
  ops: (site: string) => Promise<string>,
  alive: () => boolean,
  withinMs: number,
): Promise<Map<string, { table: StatusRun; json: SiteStatus }>> {
  const deadline = Date.now() + withinMs;
  const seen = new Map<string, StatusRun>();
  for (;;) {
    assert.ok(alive(), 'the crawl ended before the status showed every site');
    const out = new Map<string, { table: StatusRun; json: SiteStatus }>();
    for (const site of Object.keys(EXPECTED_PHASE)) {
      const address = await ops(site);
      const table = await statusCli(address, site);
      seen.set(site, table);
      const row = hostRows(table.stdout).find((r) => r.host === site);
      // queued.test waits the restart gap before its robots.txt, too: it counts once its Crawl-delay is known
      if (table.code !== 0 || row === undefined || row.phase !== EXPECTED_PHASE[site]) continue;
      if (site === 'queued.test' && !/ READY/.test(row.line)) continue;
      const json = await statusCli(address, site, ['--json']);
      assert.equal(json.code, 0, json.stderr);
      out.set(site, { table, json: (JSON.parse(json.stdout) as { status: SiteStatus }).status });
    }
    if (out.size === Object.keys(EXPECTED_PHASE).length) return out;
    if (Date.now() > deadline)
      assert.fail(
        `not every site reached its phase:\n${[...seen]
          .map(([s, r]) => `${s} (exit ${r.code}):\n${r.stdout}${r.stderr}`)
          .join('\n')}`,
      );
    await sleep(500);
  }
}

/**
 * Checks each site's status against the web server's request log, the truth of what was asked and
 * answered: the back-off began after the 429 the server sent and lasts its Retry-After, the
 * robots.txt the status calls unavailable was answered 503, and the queued site's URLs wait out
 * its Crawl-delay from the end of its robots.txt. `clockSlackMs` covers two clocks of one machine
 * and the least transit of a lease, by which a fetcher's reported times run early: tens of ms, but
 * a crawl's first leases, read while the process still starts, set it alone (a loaded CI read a
 * robots.txt's end 54 ms early, past the 50 ms allowed then). A misapplied Crawl-delay or
 * Retry-After is off by seconds.
 */
export function checkAgainstLog(
  statuses: Map<string, { table: StatusRun; json: SiteStatus }>,
  log: readonly RequestLogEntry[],
  clockSlackMs = 300,
): void {
  const of = (host: string) => log.filter((e) => e.host === host);

  const queued = statuses.get('queued.test')!;
  const qRow = hostRows(queued.table.stdout).find((r) => r.host === 'queued.test')!;
  const qRobots = of('queued.test').find((e) => e.path === '/robots.txt' && e.status === 200);
  assert.ok(qRobots, 'queued.test: the server never answered its robots.txt');
  const pagesAsked = of('queued.test').filter((e) => e.path !== '/robots.txt' && e.start < queued.json.now).length;
  assert.equal(qRow.queued, 4 - pagesAsked, `queued.test: queued URLs vs the server's log\n${queued.table.stdout}`);
  assert.ok(qRow.queued >= 3, queued.table.stdout);
  const qHost = queued.json.hosts.find((h) => h.host === 'queued.test')!;
  assert.ok(
    qHost.nextEligibleAt! >= qRobots.end + CRAWL_DELAY_S * 1000 - clockSlackMs,
    `queued.test is eligible at ${qHost.nextEligibleAt}, before the Crawl-delay from its robots.txt (${qRobots.end})`,
  );
  assert.match(qRow.line, /READY/, 'queued.test: its robots.txt is known');

  const throttled = statuses.get('throttled.test')!;
  const tHost = throttled.json.hosts.find((h) => h.host === 'throttled.test')!;
  const first429 = of('throttled.test').find((e) => e.status === 429);
  assert.ok(first429, 'throttled.test: the server never sent a 429');
  assert.equal(first429.retryAfterSec, RETRY_AFTER_S);
  assert.ok(tHost.backoff?.active, JSON.stringify(tHost));
  assert.ok(
    tHost.backoff.since >= first429.end - clockSlackMs,
    `throttled.test: the back-off began at ${tHost.backoff.since}, before the 429 ended (${first429.end})`,
  );
  const last429 = of('throttled.test')
    .filter((e) => e.status === 429 && e.end <= tHost.backoff!.since + clockSlackMs)
    .at(-1)!;
  assert.ok(
    tHost.backoff.until >= last429.end + RETRY_AFTER_S * 1000 - clockSlackMs,
    `throttled.test: backed off until ${tHost.backoff.until}, short of Retry-After from ${last429.end}`,
  );
  assert.ok(
    of('throttled.test').every((e) => e.path === '/robots.txt' || e.status === 429),
    'throttled.test: a page answered other than 429',
  );
  assert.match(throttled.table.stdout, /HTTP 429 with Retry-After 120 s|HTTP 429 or 503/);
  assert.ok(hostRows(throttled.table.stdout).find((r) => r.host === 'throttled.test')!.queued >= 1);

  const norobots = statuses.get('norobots.test')!;
  const nHost = norobots.json.hosts.find((h) => h.host === 'norobots.test')!;
  const nLog = of('norobots.test');
  assert.ok(nLog.length > 0 && nLog.every((e) => e.path === '/robots.txt' && e.status === 503), JSON.stringify(nLog));
  const origin = nHost.robots.find((r) => r.state === 'UNAVAILABLE');
  assert.ok(origin, JSON.stringify(nHost.robots));
  assert.ok(origin.fetchedAt >= nLog[0]!.end - clockSlackMs, 'norobots.test: unavailable before its 503');
  assert.equal(origin.failures, nLog.filter((e) => e.end <= origin.fetchedAt + clockSlackMs).length);
  assert.match(nHost.parkedReason ?? '', /robots\.txt unavailable/);
  const nRow = hostRows(norobots.table.stdout).find((r) => r.host === 'norobots.test')!;
  assert.equal(nRow.queued, 2, norobots.table.stdout);
  assert.match(nRow.line, /robots\.txt unavailable/);
}
