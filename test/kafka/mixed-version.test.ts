import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';
import { PORT, type PageSpec, type SiteSpec } from '../../synthetic-web/sites.js';
import { checkPoliteness, formatPolitenessReport } from '../../synthetic-web/politeness.js';
import { KafkaPort } from '../../runtime/engines/kafka/kafka-port.js';
import { readChangelogs } from '../../runtime/engines/kafka/changelog-reader.js';
import { valueSubject } from '../../runtime/serdes.js';
import { validateCrawlConfig } from '../../processors/common/crawl-config.js';
import { crawlTopology, TOPICS } from '../../topology/crawl-topology.js';
import { countByUrl, removeDir, sh, sleep, tempDir, writeSeeds } from '../e2e/harness.js';
import { kafkaInfra } from './infra.js';
import { buildAt, evolvedBuild, startBuild, THIS_BUILD, type Build, type BuildInstance } from './builds.js';
import { injectArgs, LOOPBACK_WEB_ARGS, pageRecordsOf } from './page-records.js';

// fresh topics and registry subjects per run: the broker and registry are shared and kept up
const APP = `mixed-${Date.now().toString(36)}`;
const SITES = 8;
/** Sites seeded only once the old frontier is gone: work that only the new frontier can lease. */
const LATE_SITES = 2;
// 10 pages, not more: a chain's /13.html is past the template allowance (12) of a site other
// sites link to at its home only, and /16.html past the hop limit (15) of a seeded one
const CHAIN = 10;
const host = (i: number, group = 'mixed', n = SITES): string => `${group}-${String.fromCharCode(97 + (i % n))}.test`;

/**
 * A chain of CHAIN pages ('/' → '/1.html' → …), each also linking to the next site's home page
 * of its group (of `n` sites).
 */
function chainSite(i: number, group = 'mixed', n = SITES): SiteSpec {
  const pages: Record<string, PageSpec> = {};
  for (let p = 0; p < CHAIN; p++)
    pages[p === 0 ? '/' : `/${p}.html`] = {
      title: `${host(i, group, n)} page ${p}`,
      links: [...(p + 1 < CHAIN ? [`/${p + 1}.html`] : []), `http://${host(i + 1, group, n)}:${PORT}/`],
    };
  return { host: host(i, group, n), seed: i % 2 === 0, pages };
}

/**
 * The newer build's change: one nullable field, default null, appended to every record that
 * crosses between the roles (FULL_TRANSITIVE takes it). The code does not know of it, so the
 * newer build writes it as null, under the new version's id.
 */
const NOTE = { name: 'mixedVersionNote', type: ['null', 'string'], default: null };
const EVOLVED: readonly [topic: string, file: string][] = [
  [TOPICS.links, 'link-batch.avsc'],
  [TOPICS.fetchRequests, 'fetch-request.avsc'],
  [TOPICS.fetchResults, 'fetch-result.avsc'],
  [TOPICS.fetched, 'fetched-page.avsc'],
  [TOPICS.parsedPages, 'parsed-page.avsc'],
  [TOPICS.pageRecords, 'page-record.avsc'],
];

/** The ids of a subject's versions, oldest first, as the registry lists them. */
async function versionIds(registry: string, subject: string): Promise<number[]> {
  const base = `${registry.replace(/\/+$/, '')}/subjects/${encodeURIComponent(subject)}/versions`;
  const versions = (await (await fetch(base)).json()) as number[];
  const ids: number[] = [];
  for (const v of versions) ids.push(((await (await fetch(`${base}/${v}`)).json()) as { id: number }).id);
  return ids;
}

/** Waits until `ready()` or `ms` pass; fails with `what` then. */
async function until(ready: () => boolean | Promise<boolean>, ms: number, what: () => string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ready())) {
    if (Date.now() > deadline) assert.fail(what());
    await sleep(250);
  }
}

test(
  'a rolling upgrade on one cluster: an older build and a newer one whose schemas gained a field run side by side in the same consumer groups, the fetchers and parsers upgraded first, then the frontier; every page is recorded exactly once, nothing is dead-lettered, and records of both schema versions crossed between the builds',
  { timeout: 600_000 },
  async (t) => {
    const { brokers, registry } = kafkaInfra();
    // CRAWLSTREAM_OLD_BUILD=<package root> runs an older checkout (compiled) as the old build
    const old: Build = buildAt(process.env['CRAWLSTREAM_OLD_BUILD'] ?? THIS_BUILD);
    const dir = tempDir('kafka-mixed');
    const newer: Build = evolvedBuild(
      buildAt(THIS_BUILD),
      join(dir, 'new-build'),
      EVOLVED.map(([, file]) => ({ file, field: NOTE })),
    );
    t.diagnostic(`old build ${old.root}, new build ${newer.root}, app id ${APP}`);
    // the late sites link to no other group and are not among the first seeds: nobody knows them
    // until they are injected after the handover (whatever the old frontier had fetched by then)
    const first = Array.from({ length: SITES }, (_, i) => chainSite(i));
    const late = Array.from({ length: LATE_SITES }, (_, i) => chainSite(i, 'late', LATE_SITES));
    const sites = [...first, ...late];
    const web = await SyntheticWeb.start({ sites });
    const instances: BuildInstance[] = [];
    const pageRequests = (): number => web.requests().filter((e) => e.path !== '/robots.txt').length;
    const logs = (): string =>
      instances.map((i) => `== ${i.name} (${i.build === old ? 'old' : 'new'})\n${i.stderr().slice(-3000)}`).join('\n');
    /** The first dead letters each instance logged: a build that cannot read the other's records. */
    const deadLetters = (): string[] =>
      instances.flatMap((i) =>
        i
          .stderr()
          .split('\n')
          .filter((l) => l.includes('dead letter'))
          .slice(0, 5)
          .map((l) => `${i.name}: ${l}`),
      );
    /** `cond`, but a dead letter fails the test at once: the crawl would stall on it. */
    const crawling =
      (cond: () => boolean): (() => boolean) =>
      () => {
        const dead = deadLetters();
        if (dead.length > 0) assert.fail(`records were dead-lettered:\n${dead.join('\n')}`);
        return cond();
      };
    const common = [
      '--brokers',
      brokers,
      '--registry',
      registry,
      '--app-id',
      APP,
      ...LOOPBACK_WEB_ARGS,
      '--quiet',
      '--session-timeout',
      '6000',
      '--fetch-timeout',
      '3000',
      '--metrics-port',
      '0',
    ];
    const launch = (build: Build, name: string, role: string): BuildInstance => {
      const i = startBuild(build, name, ['run', '--role', role, '--data', join(dir, name), ...common]);
      instances.push(i);
      return i;
    };
    const ready = async (i: BuildInstance): Promise<boolean> => {
      if (i.child.exitCode !== null) assert.fail(`${i.name} exited ${i.child.exitCode}\n${(await i.exited).stderr}`);
      if (!i.ops) return false;
      return (await fetch(`http://${i.ops}/readyz`).catch(() => undefined))?.status === 200;
    };
    /** Injects the seeds among `group` with `build`'s CLI (so under its schemas), from a seeds file in `into`. */
    const injectSeeds = async (build: Build, group: readonly SiteSpec[], into: string): Promise<void> => {
      mkdirSync(into, { recursive: true });
      const hosts = new Set(group.filter((s) => s.seed).map((s) => s.host));
      const seeds = writeSeeds(
        into,
        web.seedUrls().filter((u) => hosts.has(new URL(u).hostname)),
      );
      const injected = await sh(process.execPath, [build.cli, ...injectArgs(seeds, brokers, registry, APP)]);
      assert.equal(injected.code, 0, injected.stderr);
    };
    /** SIGTERM, as a rolling upgrade stops an instance: it leaves its groups and must exit 0. */
    const retire = async (i: BuildInstance): Promise<void> => {
      i.child.kill('SIGTERM');
      const ended = await i.exited;
      assert.equal(ended.code, 0, `${i.name} exited ${ended.code}/${ended.signal}\n${ended.stderr.slice(-4000)}`);
    };
    try {
      const created = await sh(process.execPath, [
        newer.cli,
        'topics',
        'create',
        '--brokers',
        brokers,
        '--app-id',
        APP,
      ]);
      assert.equal(created.code, 0, created.stderr);

      // everything old: its schemas are each subject's version 1. The seeds first, alone: it
      // registers every subject, which processes starting at once may race to do (Apicurio
      // answers the loser's first compatibility PUT with 409)
      await injectSeeds(old, first, dir);
      const frontierOld = launch(old, 'frontier-old', 'frontier');
      const fetcherOld = launch(old, 'fetcher-old', 'fetcher');
      const parserOld = launch(old, 'parser-old', 'parser');
      const began = Date.now();
      await until(
        crawling(() => pageRequests() >= 12),
        240_000,
        () => `the old build did not crawl: ${pageRequests()}\n${logs()}`,
      );

      // fetchers and parsers upgraded: the new ones join the groups beside the old, then the old leave;
      // from here the old frontier reads only new-version fetch results, links and page records
      const fetcherNew = launch(newer, 'fetcher-new', 'fetcher');
      const parserNew = launch(newer, 'parser-new', 'parser');
      for (const i of [fetcherNew, parserNew])
        await until(
          () => ready(i),
          120_000,
          () => `${i.name} not ready\n${logs()}`,
        );
      t.diagnostic(`new fetcher and parser ready after ${Date.now() - began} ms at ${pageRequests()} page requests`);
      await Promise.all([retire(fetcherOld), retire(parserOld)]);
      const upgraded = pageRequests();
      t.diagnostic(`old fetcher and parser gone after ${Date.now() - began} ms at ${upgraded} page requests`);

      await until(
        crawling(() => pageRequests() >= upgraded + 16),
        240_000,
        () => `the old frontier and the new fetcher and parser did not crawl: ${pageRequests()}\n${logs()}`,
      );
      const frontierNew = launch(newer, 'frontier-new', 'frontier');
      await until(
        () => ready(frontierNew),
        120_000,
        () => `frontier-new not ready\n${logs()}`,
      );
      t.diagnostic(`new frontier ready after ${Date.now() - began} ms at ${pageRequests()} page requests`);
      await retire(frontierOld);
      t.diagnostic(`old frontier gone after ${Date.now() - began} ms at ${pageRequests()} page requests`);
      // the old frontier may have fetched every first page by now (it did in a CI): these seeds
      // are leased by the new frontier alone, so its version of fetch-requests is always written
      await injectSeeds(newer, late, join(dir, 'late'));

      // done when the web has seen no request for 15 s and every page is recorded (records may
      // trail the last fetch by a commit), or recording stops short of that
      const expected = new Set(
        sites.flatMap((s) => Object.keys(s.pages).map((path) => `http://${s.host}:${web.port}${path}`)),
      );
      const recordsOf = () => pageRecordsOf(brokers, registry, `${APP}.page-records`);
      let last = -1;
      let quietSince = Date.now();
      const quiet = crawling(() => Date.now() - quietSince >= 15_000 || Date.now() - began >= 420_000);
      while (!quiet()) {
        await sleep(1_000);
        const n = web.requests().length;
        if (n !== last) [last, quietSince] = [n, Date.now()];
      }
      t.diagnostic(`crawl quiet after ${quietSince - began} ms: ${pageRequests()} page requests`);
      for (let tries = 0; tries < 10; tries++) {
        if (new Set((await recordsOf()).map((r) => r.url)).size >= expected.size) break;
        await sleep(3_000);
      }
      for (const i of [fetcherNew, parserNew, frontierNew]) await retire(i);

      const port = new KafkaPort(
        [brokers],
        `${APP}-check`,
        undefined,
        undefined,
        crawlTopology({ config: validateCrawlConfig({}), partitions: 4, warcDir: tmpdir(), applicationId: APP }),
      );
      try {
        const admin = await port.admin();
        const dead = await admin.endOffsets(`${APP}-dead-letters`).finally(() => admin.close());
        assert.deepEqual(
          [...dead].filter(([, n]) => n > 0),
          [],
          `records were dead-lettered:\n${deadLetters().join('\n')}`,
        );

        // both versions were written, and crossed: each topic holds records framed with both ids
        for (const [topic] of EVOLVED) {
          const ids = await versionIds(registry, valueSubject(`${APP}.${topic}`));
          assert.equal(ids.length, 2, `${APP}.${topic}: the old build's version and the new build's`);
          const framed = new Map<number, number>();
          await readChangelogs(
            port,
            [0, 1, 2, 3].map((partition) => ({ topic, partition, from: 0 })),
            (_t, _p, batch) => {
              for (const r of batch) {
                if (r.value === null || r.value[0] !== 0) continue;
                const id = r.value.readUInt32BE(1);
                framed.set(id, (framed.get(id) ?? 0) + 1);
              }
            },
          );
          t.diagnostic(`${topic}: ${ids.map((id) => `${framed.get(id) ?? 0} records of id ${id}`).join(', ')}`);
          assert.deepEqual([...framed.keys()].sort(), [...ids].sort(), `${topic}: ids framed in the topic`);
        }
      } finally {
        await port.close();
      }

      const records = (await recordsOf()) as (Awaited<ReturnType<typeof recordsOf>>[number] & { schemaId: number })[];
      const counts = countByUrl(records);
      assert.deepEqual(
        [...counts].filter(([, n]) => n !== 1),
        [],
        'a URL has more than one committed page record',
      );
      assert.deepEqual(new Set(counts.keys()), expected, `pages recorded and pages of the web differ\n${logs()}`);
      assert.equal(new Set(records.map((r) => r.schemaId)).size, 2, 'the independent reader read both versions');
      // fetched once: the old instances left their groups with their work committed, nothing was fetched again
      const fetched = web.requests().filter((e) => e.path !== '/robots.txt');
      assert.deepEqual(
        new Set(fetched.map((e) => `http://${e.host}:${web.port}${e.path}`)),
        expected,
        'pages fetched and pages of the web differ',
      );
      if (fetched.length !== expected.size) {
        // which page, when, and what the instances said: a refetch is a lease expired or a result lost at a handover
        const times = new Map<string, number[]>();
        for (const e of fetched) times.set(`${e.host}${e.path}`, [...(times.get(`${e.host}${e.path}`) ?? []), e.start]);
        const twice = [...times]
          .filter(([, at]) => at.length > 1)
          .map(([u, at]) => `${u} at ${at.map((x) => Math.round(x - began)).join(', ')} ms`);
        assert.fail(`a page was fetched more than once: ${twice.join('; ')}\n${logs()}`);
      }
      const report = checkPoliteness(web.requests(), web.sites, { userAgent: 'crawlstream' });
      assert.deepEqual(report.violations, [], formatPolitenessReport(report));
    } finally {
      for (const i of instances) i.child.kill('SIGKILL');
      await web.close();
      removeDir(dir);
    }
  },
);
